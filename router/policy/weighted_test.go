package policy

import (
	"testing"

	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// storedPrompt is a BlockStored event for the full blocks of text.
func storedPrompt(text string, bs int) kvevents.Batch {
	toks := tokenizer.Tokenize(text)
	n := len(toks) / bs
	ev := kvevents.BlockStored{TokenIDs: toks[:n*bs], BlockSize: bs, Medium: kvevents.MediumGPU}
	for i := range n {
		ev.BlockHashes = append(ev.BlockHashes, kvevents.IntHash(uint64(1000+i)))
	}
	return kvevents.Batch{Events: []kvevents.Event{ev}}
}

func TestWeightedCombinesScorers(t *testing.T) {
	t.Parallel()
	prompt := "the quick brown fox jumps over the lazy dog and then the dog sleeps in the warm sun all day long while the fox runs"
	idx := NewBlockIndex()
	idx.Apply("holder", storedPrompt(prompt, 4))
	cands := []Candidate{{ID: "idle"}, {ID: "holder", InFlight: 3}}
	pick := func(scorers ...Scorer) Decision {
		t.Helper()
		p, err := New(Weighted, Params{Blocks: idx, Scorers: scorers}, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := p.Pick(Request{Text: prompt}, cands)
		if !ok {
			t.Fatal("no pick")
		}
		return d
	}
	if d := pick(Scorer{ScorerLoad, 1}); d.Index != 0 {
		t.Errorf("load only: %+v, want the idle worker", d)
	}
	if d := pick(Scorer{ScorerPrecisePrefix, 1}); d.Index != 1 || d.MatchedTokens == 0 {
		t.Errorf("precise prefix only: %+v, want the holder with its matched tokens", d)
	}
	// The holder holds every reusable block (score 1, load 0); the idle
	// worker none (0, load 1): the heavier weight decides.
	if d := pick(Scorer{ScorerPrecisePrefix, 2}, Scorer{ScorerLoad, 1}); d.Index != 1 {
		t.Errorf("prefix 2, load 1: %+v, want the holder", d)
	}
	if d := pick(Scorer{ScorerPrecisePrefix, 1}, Scorer{ScorerLoad, 2}); d.Index != 0 {
		t.Errorf("prefix 1, load 2: %+v, want the idle worker", d)
	}
	for _, bad := range [][]Scorer{{{"magic", 1}}, {{ScorerLoad, 0}}} {
		if _, err := New(Weighted, Params{Scorers: bad}, nil); err == nil {
			t.Errorf("scorers %+v accepted", bad)
		}
	}
}
