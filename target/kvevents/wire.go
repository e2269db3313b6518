package kvevents

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Medium names where a block lives, as vLLM's events name it.
const (
	MediumGPU = "GPU"
	MediumCPU = "CPU"
)

// Event tags: msgspec writes a tagged struct as an array whose first
// element is the class name.
const (
	tagStored  = "BlockStored"
	tagRemoved = "BlockRemoved"
	tagCleared = "AllBlocksCleared"
)

// BlockHash is an engine's block hash. vLLM sends it as an integer (older
// versions, and the simulator) or as bytes (sha256-based hashing); a
// subscriber only compares hashes, so both forms are kept as they came.
type BlockHash struct {
	Int   uint64
	Bytes string // non-empty for the bytes form
}

// IntHash is the integer form of a hash.
func IntHash(h uint64) BlockHash { return BlockHash{Int: h} }

// Event is one of BlockStored, BlockRemoved and AllBlocksCleared.
type Event interface{ tag() string }

// BlockStored says blocks entered the cache: consecutive blocks of one
// sequence, the first chained to Parent (absent for a sequence's first
// block), holding TokenIDs (BlockSize per block).
type BlockStored struct {
	BlockHashes []BlockHash
	Parent      *BlockHash
	TokenIDs    []int
	BlockSize   int
	LoRAID      *int
	Medium      string // "" when unknown (older engines)
}

// BlockRemoved says blocks left the cache (evicted).
type BlockRemoved struct {
	BlockHashes []BlockHash
	Medium      string
}

// AllBlocksCleared says the whole cache was reset.
type AllBlocksCleared struct{}

func (BlockStored) tag() string      { return tagStored }
func (BlockRemoved) tag() string     { return tagRemoved }
func (AllBlocksCleared) tag() string { return tagCleared }

// Batch is what one message carries: the events of one engine step, with
// the wall-clock time they were published at (seconds since the epoch).
type Batch struct {
	TS     float64
	Events []Event
	// DPRank is the data-parallel rank that published (nil: not sent).
	DPRank *int
}

// Encode writes b as vLLM's msgspec does (array_like, omit_defaults):
// every struct is an array of its fields in order, tagged events start with
// their class name, and trailing fields at their default are left out.
func (b Batch) Encode() ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	n := 2
	if b.DPRank != nil {
		n = 3
	}
	if err := errors.Join(e.EncodeArrayLen(n), e.EncodeFloat64(b.TS), e.EncodeArrayLen(len(b.Events))); err != nil {
		return nil, err
	}
	for _, ev := range b.Events {
		if err := encodeEvent(e, ev); err != nil {
			return nil, err
		}
	}
	if b.DPRank != nil {
		if err := e.EncodeInt(int64(*b.DPRank)); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func encodeEvent(e *msgpack.Encoder, ev Event) error {
	switch ev := ev.(type) {
	case BlockStored:
		errs := []error{e.EncodeArrayLen(7), e.EncodeString(tagStored), encodeHashes(e, ev.BlockHashes)}
		if ev.Parent == nil {
			errs = append(errs, e.EncodeNil())
		} else {
			errs = append(errs, encodeHash(e, *ev.Parent))
		}
		errs = append(errs, e.EncodeArrayLen(len(ev.TokenIDs)))
		for _, t := range ev.TokenIDs {
			errs = append(errs, e.EncodeInt(int64(t)))
		}
		errs = append(errs, e.EncodeInt(int64(ev.BlockSize)), encodeOptInt(e, ev.LoRAID), encodeOptString(e, ev.Medium))
		return errors.Join(errs...)
	case BlockRemoved:
		return errors.Join(e.EncodeArrayLen(3), e.EncodeString(tagRemoved), encodeHashes(e, ev.BlockHashes), encodeOptString(e, ev.Medium))
	case AllBlocksCleared:
		return errors.Join(e.EncodeArrayLen(1), e.EncodeString(tagCleared))
	}
	return fmt.Errorf("kvevents: unknown event %T", ev)
}

func encodeHashes(e *msgpack.Encoder, hs []BlockHash) error {
	if err := e.EncodeArrayLen(len(hs)); err != nil {
		return err
	}
	for _, h := range hs {
		if err := encodeHash(e, h); err != nil {
			return err
		}
	}
	return nil
}

func encodeHash(e *msgpack.Encoder, h BlockHash) error {
	if h.Bytes != "" {
		return e.EncodeBytes([]byte(h.Bytes))
	}
	return e.EncodeUint(h.Int)
}

func encodeOptInt(e *msgpack.Encoder, v *int) error {
	if v == nil {
		return e.EncodeNil()
	}
	return e.EncodeInt(int64(*v))
}

func encodeOptString(e *msgpack.Encoder, s string) error {
	if s == "" {
		return e.EncodeNil()
	}
	return e.EncodeString(s)
}

// Decode reads a batch in vLLM's wire form. It accepts trailing fields it
// does not know (newer vLLM versions append some) and both hash forms.
func Decode(payload []byte) (Batch, error) {
	var raw any
	if err := msgpack.Unmarshal(payload, &raw); err != nil {
		return Batch{}, fmt.Errorf("kvevents: batch: %w", err)
	}
	arr, ok := raw.([]any)
	if !ok || len(arr) < 2 {
		return Batch{}, fmt.Errorf("kvevents: batch: want an array [ts, events, ...], got %T", raw)
	}
	var b Batch
	var err error
	if b.TS, err = asFloat(arr[0]); err != nil {
		return Batch{}, fmt.Errorf("kvevents: batch ts: %w", err)
	}
	evs, ok := arr[1].([]any)
	if !ok {
		return Batch{}, fmt.Errorf("kvevents: batch events: want an array, got %T", arr[1])
	}
	for i, raw := range evs {
		ev, err := decodeEvent(raw)
		if err != nil {
			return Batch{}, fmt.Errorf("kvevents: event %d: %w", i, err)
		}
		b.Events = append(b.Events, ev)
	}
	if len(arr) > 2 && arr[2] != nil {
		r, err := asInt(arr[2])
		if err != nil {
			return Batch{}, fmt.Errorf("kvevents: batch data_parallel_rank: %w", err)
		}
		b.DPRank = &r
	}
	return b, nil
}

func decodeEvent(raw any) (Event, error) {
	f, ok := raw.([]any)
	if !ok || len(f) == 0 {
		return nil, fmt.Errorf("want a tagged array, got %T", raw)
	}
	tag, _ := f[0].(string)
	field := func(i int) any {
		if i < len(f) {
			return f[i]
		}
		return nil
	}
	switch tag {
	case tagStored:
		var ev BlockStored
		var err error
		if ev.BlockHashes, err = asHashes(field(1)); err != nil {
			return nil, fmt.Errorf("BlockStored block_hashes: %w", err)
		}
		if p := field(2); p != nil {
			h, err := asHash(p)
			if err != nil {
				return nil, fmt.Errorf("BlockStored parent_block_hash: %w", err)
			}
			ev.Parent = &h
		}
		toks, ok := field(3).([]any)
		if !ok {
			return nil, fmt.Errorf("BlockStored token_ids: want an array, got %T", field(3))
		}
		ev.TokenIDs = make([]int, len(toks))
		for i, t := range toks {
			if ev.TokenIDs[i], err = asInt(t); err != nil {
				return nil, fmt.Errorf("BlockStored token_ids[%d]: %w", i, err)
			}
		}
		if ev.BlockSize, err = asInt(field(4)); err != nil || ev.BlockSize <= 0 {
			return nil, fmt.Errorf("BlockStored block_size: want a positive integer, got %v", field(4))
		}
		if len(ev.TokenIDs) != ev.BlockSize*len(ev.BlockHashes) {
			return nil, fmt.Errorf("BlockStored: %d token ids for %d blocks of %d", len(ev.TokenIDs), len(ev.BlockHashes), ev.BlockSize)
		}
		if l := field(5); l != nil {
			v, err := asInt(l)
			if err != nil {
				return nil, fmt.Errorf("BlockStored lora_id: %w", err)
			}
			ev.LoRAID = &v
		}
		ev.Medium, _ = field(6).(string)
		return ev, nil
	case tagRemoved:
		hs, err := asHashes(field(1))
		if err != nil {
			return nil, fmt.Errorf("BlockRemoved block_hashes: %w", err)
		}
		m, _ := field(2).(string)
		return BlockRemoved{BlockHashes: hs, Medium: m}, nil
	case tagCleared:
		return AllBlocksCleared{}, nil
	}
	return nil, fmt.Errorf("unknown event tag %v", f[0])
}

func asHashes(v any) ([]BlockHash, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %T", v)
	}
	out := make([]BlockHash, len(arr))
	for i, x := range arr {
		h, err := asHash(x)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func asHash(v any) (BlockHash, error) {
	switch v := v.(type) {
	case []byte:
		if len(v) == 0 {
			return BlockHash{}, errors.New("empty bytes hash")
		}
		return BlockHash{Bytes: string(v)}, nil
	case string: // some encoders send bytes as str
		if v == "" {
			return BlockHash{}, errors.New("empty hash")
		}
		return BlockHash{Bytes: v}, nil
	}
	n, err := asUint(v)
	return BlockHash{Int: n}, err
}

// asUint takes any msgpack integer; a negative one (Python's hash() is
// signed) keeps its two's-complement bits, which is all a comparison needs.
func asUint(v any) (uint64, error) {
	switch v := v.(type) {
	case int8:
		return uint64(int64(v)), nil
	case int16:
		return uint64(int64(v)), nil
	case int32:
		return uint64(int64(v)), nil
	case int64:
		return uint64(v), nil
	case uint8:
		return uint64(v), nil
	case uint16:
		return uint64(v), nil
	case uint32:
		return uint64(v), nil
	case uint64:
		return v, nil
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

func asInt(v any) (int, error) {
	n, err := asUint(v)
	return int(int64(n)), err
}

func asFloat(v any) (float64, error) {
	switch v := v.(type) {
	case float64:
		return v, nil
	case float32:
		return float64(v), nil
	}
	n, err := asUint(v)
	return float64(int64(n)), err
}
