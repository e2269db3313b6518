package driver

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// Prompted is a System that takes a request as its prompt's token ids
// (the virtual clock's token path), as spans, instead of its body: it builds the
// request from Shell, the body every such request of the run shares but
// for its prompt and length, and has no body to parse or tokenize.
type Prompted interface {
	SendPrompt(id int, route string, header http.Header, p Prompt, at time.Duration) error
	// ReadsPrompts is false when nothing on a request's way reads its
	// prompt's ids or text (only the engines' prefix caches, by the
	// blocks' identities): the run's prompts may then come blind, their
	// shared parts named, never drawn (tokenizer.Span.Blind; Prompt.Text
	// and Chars are then not the prompt's). Asked once, as a run starts.
	ReadsPrompts() bool
}

// Prompt is a request's prompt on the token path: the ids the sim
// tokenizer gives its text (for a chat request, its one user message's),
// drawn with the text rather than tokenized from it, and its length.
type Prompt struct {
	// Spans are the ids in order: a span the workload keyed (Key != 0: a
	// trace block, a random workload's shared prefix) is the one every
	// prompt holding it shares, not a copy. Read-only: the ids belong to
	// the workload.
	Spans     []tokenizer.Span
	MaxTokens int
	// parts are the prompt's text (Text) as the workload drew it.
	parts []string
	// Shell is the run's body with a one-word prompt and a length of 1:
	// what parses to every other field of the request. Every request of a
	// run shares it.
	Shell []byte
}

// Text is the prompt's text (a chat request's user message), for a router
// policy that reads it as the HTTP path does (cache_aware's prefix tree):
// joined when asked for (a prompt of one part is the item's own string).
func (p Prompt) Text() string { return workload.Join(p.parts) }

// Chars is Text's length in characters (routing_threshold's estimate),
// without joining it.
func (p Prompt) Chars() int {
	n := -1
	for _, s := range p.parts {
		if s != "" {
			n += 1 + utf8.RuneCountInString(s)
		}
	}
	return max(n, 0)
}

// tokenPath hands a run's requests to a Prompted system as token ids.
type tokenPath struct {
	sys   Prompted
	shell []byte
	// blind: the measured requests' shared parts go blind (blindPrompts).
	blind bool
}

// shellKeys are body keys an extra_body must not override for the token
// path: the request would no longer be the shell's with the item's prompt
// and length.
var shellKeys = []string{"prompt", "messages", "max_tokens", "max_completion_tokens"}

// newTokenPath is the run's token path; nil when sys takes bodies only, or
// the workload's requests are not each an item's own prompt drawn by the
// sim tokenizer (the engine's tokenizer), whose ids are then the text's:
// those requests go as bodies.
func newTokenPath(cfg Config, sys System) (*tokenPath, error) {
	ps, ok := sys.(Prompted)
	if !ok {
		return nil, nil
	}
	cfg = cfg.withDefaults()
	if k := cfg.Workload.Kind; k != workload.Random && k != workload.Trace {
		return nil, nil
	}
	tok, err := cfg.tokenizer()
	if err != nil {
		return nil, err
	}
	if _, sim := tok.(workload.Sim); !sim {
		return nil, nil
	}
	for _, k := range shellKeys {
		if _, ok := cfg.Workload.ExtraBody[k]; ok {
			return nil, nil
		}
	}
	shell, err := newRenderer(cfg).body(conversation{turns: []string{"x"}}, 1)
	if err != nil {
		return nil, err
	}
	return &tokenPath{sys: ps, shell: shell, blind: blindPrompts(cfg, ps)}, nil
}

// blindPrompts reports whether a run's prompts may go blind: nothing on
// their way reads them (Prompted.ReadsPrompts) and the engines generate
// to the length asked (ignore_eos), not until their own draw stops them,
// whatever the prompt's tokens.
func blindPrompts(cfg Config, ps Prompted) bool {
	return *cfg.Workload.IgnoreEOS && !ps.ReadsPrompts()
}

// handOver hands request x to the system: as token ids when its source
// drew them, else as its body. A token-path request's body and spans are
// the system's from then on: the request keeps neither while it runs.
func (v *virtual) handOver(x inTransit) error {
	if v.tp != nil {
		if spans, parts := v.p.src.Tokens(x.index); spans != nil {
			r := v.p.src.At(x.index)
			p := Prompt{Spans: spans, MaxTokens: r.MaxTokens, Shell: v.tp.shell, parts: parts}
			if v.p.src.Lazy() {
				r.Body, r.spans, r.parts = nil, nil, nil
			}
			return v.tp.sys.SendPrompt(x.index, v.route, x.header, p, v.now)
		}
	}
	return v.sys.Send(x.index, v.route, x.header, x.body, v.now)
}

// tokenSource makes src draw each request's spans when the run has a token
// path.
func (tp *tokenPath) tokenSource(src reqSource, st *Stream) {
	if tp == nil {
		return
	}
	ti, ok := st.items.(workload.TokenItems)
	if !ok {
		return
	}
	switch s := src.(type) {
	case *lazySource:
		s.tokens, s.blind = ti, tp.blind && s.r.template != nil
	case *sliceSource:
		s.tokens = func(i int) ([]tokenizer.Span, []string) {
			it, spans, parts := ti.AtParts(i, false)
			if parts == nil {
				parts = []string{it.Prompt}
			}
			return spans, parts
		}
	}
}
