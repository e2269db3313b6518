package kvevents

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

// The wire layout is msgspec's array_like, tagged form of vLLM's classes:
// a batch is [ts, events], each event [tag, fields...] in declaration order.
func TestBatchWireLayout(t *testing.T) {
	t.Parallel()
	parent := IntHash(7)
	b := Batch{TS: 1.5, Events: []Event{
		BlockStored{BlockHashes: []BlockHash{IntHash(8), IntHash(9)}, Parent: &parent, TokenIDs: []int{1, 2, 3, 4}, BlockSize: 2, Medium: MediumGPU},
		BlockRemoved{BlockHashes: []BlockHash{IntHash(7)}, Medium: MediumGPU},
		AllBlocksCleared{},
	}}
	raw, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := msgpack.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	// msgpack writes integers in their smallest form.
	want := []any{1.5, []any{
		[]any{"BlockStored", []any{int8(8), int8(9)}, int8(7), []any{int8(1), int8(2), int8(3), int8(4)}, int8(2), nil, "GPU"},
		[]any{"BlockRemoved", []any{int8(7)}, "GPU"},
		[]any{"AllBlocksCleared"},
	}}
	if diff := cmp.Diff(want, generic); diff != "" {
		t.Errorf("wire layout (-want +got):\n%s", diff)
	}
	back, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, back); diff != "" {
		t.Errorf("round trip (-sent +decoded):\n%s", diff)
	}
}

// vLLM's newer hashes are bytes, older ones signed ints, and a newer batch
// may carry trailing fields; all decode.
func TestDecodeAcceptsVLLMVariants(t *testing.T) {
	t.Parallel()
	raw, err := msgpack.Marshal([]any{2.0, []any{
		[]any{"BlockStored", []any{[]byte("abc")}, nil, []any{5}, 1, 3, nil, "future-field"},
		[]any{"BlockRemoved", []any{int64(-2)}},
	}, 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	lora, rank := 3, 1
	want := Batch{TS: 2, DPRank: &rank, Events: []Event{
		BlockStored{BlockHashes: []BlockHash{{Bytes: "abc"}}, TokenIDs: []int{5}, BlockSize: 1, LoRAID: &lora},
		BlockRemoved{BlockHashes: []BlockHash{IntHash(^uint64(1))}},
	}}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestDecodeRejectsBadBatches(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"not an array":     map[string]any{"ts": 1},
		"unknown tag":      []any{1.0, []any{[]any{"BlockMoved"}}},
		"tokens mismatch":  []any{1.0, []any{[]any{"BlockStored", []any{1}, nil, []any{1, 2, 3}, 2, nil, "GPU"}}},
		"zero block size":  []any{1.0, []any{[]any{"BlockStored", []any{1}, nil, []any{}, 0, nil, "GPU"}}},
		"string hash list": []any{1.0, []any{[]any{"BlockRemoved", "x"}}},
	} {
		raw, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(raw); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig(`{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557", "topic": "kv"}`)
	if err != nil || !c.Enabled() || c.Topic != "kv" {
		t.Fatalf("ParseConfig = %+v, %v", c, err)
	}
	for _, bad := range []string{
		`{"enable_kv_cache_events": true, "publisher": "kafka"}`,
		`{"enable_kv_cache_events": true, "endpoint": "ipc:///tmp/x"}`,
		`{"enable_kv_cache_events": true, "endpoint": "tcp://*:99999"}`,
		`{"enable_kv_cache_events": true, "buffer_stepz": 3}`,
		`{"enable_kv_cache_events": true, "buffer_steps": -1}`,
	} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%s) accepted it", bad)
		}
	}
	if ep, _ := Loopback("tcp://*:5557"); ep != "tcp://127.0.0.1:5557" {
		t.Errorf("Loopback = %q", ep)
	}
}
