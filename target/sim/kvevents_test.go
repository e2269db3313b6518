package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/kvevents/kvzmq"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/simtest"
)

// kvEventsOpts is a sim publishing KV events (with a replay socket) whose
// cache holds 24 blocks of 16 tokens, so a few prompts evict.
func kvEventsOpts() sim.Options {
	return sim.Options{
		Engine: engine.Config{NumGPUBlocksOverride: 24, MaxModelLen: 256},
		KVEvents: kvevents.Config{EnableKVCacheEvents: true, Publisher: "zmq",
			Endpoint: "tcp://*:0", ReplayEndpoint: "tcp://*:0", Topic: "kv@sim"},
	}
}

func completeCached(t *testing.T, url, p string) int {
	t.Helper()
	code, raw := post(t, url+"/v1/completions", map[string]any{"model": simtest.DefaultModel, "prompt": p, "max_tokens": 1})
	if code != http.StatusOK {
		t.Fatalf("completion: %d %s", code, raw)
	}
	var out completion
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Usage.PromptTokensDetails.CachedTokens
}

type seqBatch struct {
	seq uint64
	b   kvevents.Batch
}

func replayAll(t *testing.T, endpoint string) []seqBatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out []seqBatch
	if err := kvzmq.Replay(ctx, endpoint, 0, func(seq uint64, b kvevents.Batch) error {
		out = append(out, seqBatch{seq, b})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The sim publishes vLLM's events for what its cache does: each prompt's
// full blocks stored with their token ids, chained by parent hash; blocks
// evicted when the cache fills; a reset clears all. The replay socket
// returns every batch from sequence 0, in order.
func TestKVEventsFollowTheCache(t *testing.T) {
	t.Parallel()
	w := simtest.StartStoppable(t, kvEventsOpts())
	_, replay, err := w.Server().KVEventsEndpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	first := prompt(1, 64) // 4 full blocks, the last token recomputed
	completeCached(t, w.URL, first)
	if got := completeCached(t, w.URL, first); got != 48 {
		t.Fatalf("repeated prompt hit %d cached tokens, want 48 (3 blocks)", got)
	}
	for s := range uint64(6) { // 6 × 5 blocks > 24: the first prompt is evicted
		completeCached(t, w.URL, prompt(10+s, 80))
	}
	code, raw := post(t, w.URL+"/reset_prefix_cache", "")
	if code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, raw)
	}

	batches := replayAll(t, replay)
	if n := w.Server().KVEventsPublished(); uint64(len(batches)) != n || n == 0 {
		t.Fatalf("replayed %d batches, the server published %d", len(batches), n)
	}
	resident := map[kvevents.BlockHash]bool{}
	var stored, removed, cleared int
	var firstEvent *kvevents.BlockStored
	for i, sb := range batches {
		if sb.seq != uint64(i) {
			t.Fatalf("batch %d has sequence %d", i, sb.seq)
		}
		for _, ev := range sb.b.Events {
			switch ev := ev.(type) {
			case kvevents.BlockStored:
				if firstEvent == nil {
					firstEvent = &ev
				}
				if ev.BlockSize != 16 || ev.Medium != kvevents.MediumGPU || len(ev.TokenIDs) != 16*len(ev.BlockHashes) {
					t.Fatalf("BlockStored %+v: want block size 16, medium GPU, 16 tokens a block", ev)
				}
				if ev.Parent != nil && !resident[*ev.Parent] {
					t.Errorf("BlockStored's parent %v is not resident", *ev.Parent)
				}
				for _, h := range ev.BlockHashes {
					if resident[h] {
						t.Errorf("block %v stored twice", h)
					}
					resident[h] = true
					stored++
				}
			case kvevents.BlockRemoved:
				for _, h := range ev.BlockHashes {
					if !resident[h] {
						t.Errorf("block %v removed but not resident", h)
					}
					delete(resident, h)
					removed++
				}
			case kvevents.AllBlocksCleared:
				clear(resident)
				cleared++
			}
		}
	}
	if firstEvent == nil || firstEvent.Parent != nil {
		t.Fatalf("first BlockStored = %+v, want a chain start (no parent)", firstEvent)
	}
	want := promptIDs(1, 64)[:len(firstEvent.TokenIDs)]
	for i := range want {
		if firstEvent.TokenIDs[i] != want[i] {
			t.Fatalf("first stored tokens %v, want the prompt's %v", firstEvent.TokenIDs, want)
		}
	}
	if stored == 0 || removed == 0 || cleared != 1 || len(resident) != 0 {
		t.Errorf("stored %d, removed %d, cleared %d, left %d: want evictions, one clear, nothing left", stored, removed, cleared, len(resident))
	}
}

// A live subscriber gets the same messages: [topic, 8-byte sequence,
// payload] under the configured topic.
func TestKVEventsLiveSubscriber(t *testing.T) {
	t.Parallel()
	w := simtest.StartStoppable(t, kvEventsOpts())
	events, _, err := w.Server().KVEventsEndpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(events); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@sim"); err != nil {
		t.Fatal(err)
	}
	got := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := sub.Recv(); err == nil {
			got <- m
		}
		close(got)
	}()
	// The subscription takes hold asynchronously (ZMQ's slow joiner):
	// send fresh prompts until one batch arrives.
	var msg zmq4.Msg
	for i := uint64(0); msg.Frames == nil; i++ {
		if i == 200 {
			t.Fatal("no live batch after 200 requests")
		}
		completeCached(t, w.URL, prompt(100+i, 40))
		select {
		case m, ok := <-got:
			if !ok {
				t.Fatal("subscriber closed")
			}
			msg = m
		default:
		}
	}
	if len(msg.Frames) != 3 || string(msg.Frames[0]) != "kv@sim" || len(msg.Frames[1]) != 8 {
		t.Fatalf("message frames %q: want [topic, 8-byte seq, payload]", msg.Frames)
	}
	if _, err := kvevents.Decode(msg.Frames[2]); err != nil {
		t.Fatal(err)
	}
}

func TestKVEventsConfigNeedsPrefixCaching(t *testing.T) {
	t.Parallel()
	opts := kvEventsOpts()
	off := false
	opts.Engine.Model, opts.Engine.EnablePrefixCaching = simtest.DefaultModel, &off
	opts.Profile, _ = sim.LookupProfile("fast")
	if _, err := sim.New(opts); err == nil {
		t.Error("KV events without prefix caching were accepted")
	}
}
