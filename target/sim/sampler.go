package sim

import (
	"math"

	"github.com/autoinfer/autoinfer/target/mixhash"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// maxTopLogprobs is the most alternatives a request may ask for (vLLM's
// default max_logprobs is 20). The token model keeps exactly this many
// candidates per position.
const maxTopLogprobs = 20

// sampling is the token model of one request. Candidate tokens and their
// logits at a position are a pure function of (model, prompt tokens,
// position) through key; precision perturbs them; temperature > 0 samples
// among them with seedKey.
type sampling struct {
	key     uint64
	temp    float64
	seedKey uint64
	prec    precision
}

// candidate is one entry of a position's top-k list.
type candidate struct {
	id      int
	logprob float64
}

var wordSpan = tokenizer.Words() - tokenizer.FirstWord

// frame is the per-position state shared by the fast and full paths.
type frame struct {
	h      uint64
	base   int
	stride int
	flip   bool
}

func (s *sampling) frame(pos int) frame {
	f := s.head(pos)
	f.stride = 1 + int((f.h>>32)%uint64(wordSpan-1))
	for gcd(f.stride, wordSpan) != 1 {
		f.stride = f.stride%(wordSpan-1) + 1
	}
	return f
}

// head is pos's frame without its stride, which only ranks past the first
// use: the greedy token of a position that does not flip needs no more.
// The stride's divisions cost more than the rest of the frame, and the
// engine asks for every generated token (its block hashes).
func (s *sampling) head(pos int) frame {
	h := mixhash.Mix64(s.key ^ (uint64(pos)+1)*0x9e3779b97f4a7c15)
	f := frame{h: h, base: int(h % uint64(wordSpan))}
	if s.prec.flip > 0 {
		f.flip = unit(mixhash.Mix64(h^s.prec.salt)) < s.prec.flip
	}
	return f
}

// id is the token of rank j in the frame (after a precision flip, ranks 0
// and 1 exchange tokens but keep their logits).
func (f frame) id(j int) int {
	if f.flip && j < 2 {
		j = 1 - j
	}
	return tokenizer.FirstWord + (f.base+j*f.stride)%wordSpan
}

// token is the output token at position pos (0 = first generated token).
func (s *sampling) token(pos int) int {
	if s.temp == 0 {
		if f := s.head(pos); !f.flip {
			return f.id(0)
		}
		return s.frame(pos).id(0)
	}
	f := s.frame(pos)
	var c [maxTopLogprobs]candidate
	return c[s.fill(pos, f, &c)].id
}

// dist fills c with the top candidates at pos (descending logprob) and
// returns the index of the sampled one.
func (s *sampling) dist(pos int, c *[maxTopLogprobs]candidate) int {
	return s.fill(pos, s.frame(pos), c)
}

func (s *sampling) fill(pos int, f frame, c *[maxTopLogprobs]candidate) int {
	var logit [maxTopLogprobs]float64
	l := 0.0
	for j := range logit {
		if j > 0 {
			l -= 0.3 + 2*unit(mixhash.Mix64(f.h+uint64(j)*0xbf58476d1ce4e5b9))
		}
		logit[j] = l
		if s.prec.noise > 0 {
			logit[j] += s.prec.noise * (2*unit(mixhash.Mix64(f.h^s.prec.salt+uint64(j))) - 1)
		}
	}
	// The rest of the vocabulary holds some probability mass too.
	z := math.Exp(-1.5 - 3*unit(mixhash.Mix64(f.h^0x94d049bb133111eb)))
	for _, v := range logit {
		z += math.Exp(v)
	}
	logZ := math.Log(z)
	for j := range c {
		c[j] = candidate{id: f.id(j), logprob: logit[j] - logZ}
	}
	if s.temp == 0 {
		return 0
	}
	total := 0.0
	var w [maxTopLogprobs]float64
	for j, v := range logit {
		w[j] = math.Exp(v / s.temp)
		total += w[j]
	}
	u := unit(mixhash.Mix64(s.seedKey^(uint64(pos)+1)*0xd6e8feb86659fd93)) * total
	for j := range w {
		if u < w[j] {
			return j
		}
		u -= w[j]
	}
	return maxTopLogprobs - 1
}

// naturalLength is where a sequence stops on its own (its EOS point):
// between 32 and 512 tokens, fixed by the prompt (and seed when sampling).
func (s *sampling) naturalLength() int {
	k := s.key
	if s.temp > 0 {
		k ^= s.seedKey
	}
	return 32 + int(mixhash.Mix64(k^0x2545f4914f6cdd1d)%481)
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
