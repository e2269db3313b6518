package sim

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// mooncakeMix draws prompts shaped as the Mooncake conversation trace's:
// 24 blocks of 512 tokens, the first shared of them a recent prompt's
// leading blocks (its conversation's context), the rest fresh blocks
// (keyed, as a trace's hash_ids are, but new), then a tail of its own
// (Key 0) shorter than a block. Blind, the blocks and the tail are blind
// spans (the tail keyed as a block of its own), as the virtual clock's
// driver sends a trace it never draws.
type mooncakeMix struct {
	shared int
	blind  bool
	rnd    *rand.Rand
	ids    [][]uint16 // fresh blocks' ids: cost does not depend on them
	recent [][]tokenizer.Span
	next   uint64
}

const (
	mixBlocks   = 24
	mixBlockLen = 512
	mixTail     = 200
)

func newMooncakeMix(shared int) *mooncakeMix {
	m := &mooncakeMix{shared: shared, rnd: rand.New(rand.NewPCG(30, 24))}
	for range 64 {
		ids := make([]uint16, mixBlockLen)
		for i := range ids {
			ids[i] = uint16(m.rnd.IntN(tokenizer.VocabSize))
		}
		m.ids = append(m.ids, ids)
	}
	return m
}

func (m *mooncakeMix) prompt() []tokenizer.Span {
	p := make([]tokenizer.Span, 0, mixBlocks+1)
	if len(m.recent) > 0 {
		p = append(p, m.recent[m.rnd.IntN(len(m.recent))][:m.shared]...)
	}
	for len(p) < mixBlocks {
		m.next++
		p = append(p, m.span(m.ids[m.rnd.IntN(len(m.ids))], m.next))
	}
	tail := tokenizer.Span{IDs: m.ids[0][:mixTail]}
	if m.blind {
		m.next++
		tail = m.span(tail.IDs, m.next)
	}
	p = append(p, tail)
	if len(m.recent) < 256 {
		m.recent = append(m.recent, p)
	} else {
		m.recent[m.rnd.IntN(len(m.recent))] = p
	}
	return p
}

// span is a block of ids keyed key: blind (its length) for a blind mix.
func (m *mooncakeMix) span(ids []uint16, key uint64) tokenizer.Span {
	if m.blind {
		return tokenizer.Span{Key: key, Blind: len(ids)}
	}
	return tokenizer.Span{IDs: ids, Key: key}
}

// BenchmarkPromptIntake is what the engine does with a Mooncake-sized
// prompt before scheduling it (checking it, hashing its sampler key and
// its 16-token block chain): as shared spans through the fleet's memo,
// with 14 or 9 of its 24 blocks a recent prompt's, as blind spans (no
// memo: a block is hashed in its 32 pieces, shared or not), as flat ids, and as
// flat ids the caller first copies out of its shared blocks (the token
// path before spans). ns/op is per prompt, and so is cpu-ns/prompt, the
// process's CPU time: steadier than wall time on a loaded host.
func BenchmarkPromptIntake(b *testing.B) {
	prof, err := LookupProfile("h100-llama3-8b")
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewFleet([]Options{{Profile: prof, Engine: engcfg.Config{Model: "bench", MaxModelLen: 32768}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := f.servers[0]
	sh, err := f.Shape(0, []byte(`{"prompt":"x","max_tokens":1,"temperature":0}`), false)
	if err != nil {
		b.Fatal(err)
	}
	intake := func(b *testing.B, prompt []int, spans []tokenizer.Span) {
		req, e := sh.request(prompt, spans, 0, &srv.cfg)
		if e != nil {
			b.Fatal(e.msg)
		}
		_ = srv.newSeq("b", req, &f.memo)
	}
	flat := make([]int, mixBlocks*mixBlockLen+mixTail)
	// 60 % of blocks repeated (the brief's mix), 38 % (the public
	// conversation trace's and writeMooncakeTrace's share).
	for _, shared := range []int{14, 9} {
		b.Run(fmt.Sprintf("spans/shared=%d", shared), func(b *testing.B) {
			m := newMooncakeMix(shared)
			f.memo = promptMemo{} // a run's own: the mix draws the same keys every run
			defer cpuPerOp(b)()
			for b.Loop() {
				intake(b, nil, m.prompt())
			}
		})
	}
	b.Run("blind", func(b *testing.B) {
		m := newMooncakeMix(14)
		m.blind = true
		defer cpuPerOp(b)()
		for b.Loop() {
			intake(b, nil, m.prompt())
		}
	})
	b.Run("flat", func(b *testing.B) {
		m := newMooncakeMix(14)
		defer cpuPerOp(b)()
		for b.Loop() {
			m.prompt()
			intake(b, flat, nil)
		}
	})
	b.Run("flat+copy", func(b *testing.B) {
		m := newMooncakeMix(14)
		defer cpuPerOp(b)()
		for b.Loop() {
			intake(b, flatten(m.prompt()), nil)
		}
	})
}

// cpuPerOp starts counting the process's CPU time; the function it
// returns reports it per op of b as cpu-ns/prompt.
func cpuPerOp(b *testing.B) func() {
	cpu := func() int64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/prompt") }
}
