package virtual

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/pd"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// The token path (driver.Prompted): the engines take a request's prompt
// as ids.
var _ driver.Prompted = (*Deployment)(nil)

// SendPrompt is Send of a request whose prompt comes as token ids (spans): the
// router decides on the prompt as over HTTP (Router.RoutePrompt: the text
// the HTTP path would extract from the body, for a policy that reads it),
// and each engine leg is the run's shell with the ids (sim.Shape). No body
// exists: nothing renders, parses or tokenizes one.
func (d *Deployment) SendPrompt(id int, route string, header http.Header, p driver.Prompt, at time.Duration) error {
	chat := route == "/v1/chat/completions"
	sh, err := d.shapesOf(p.Shell, chat)
	if err != nil {
		return err
	}
	// Its token times sized for its length up front (bounded: a request may
	// stop early), not grown token by token.
	rq := &request{id: id, route: route, prompt: &promptLegs{shapes: sh, spans: p.Spans, max: p.MaxTokens},
		tokens: make([]time.Duration, 0, min(max(p.MaxTokens, 0), maxPresized))}
	text := func() string {
		if chat {
			return "user:" + p.Text() + "\n" // parseOpenAI's rendering of one user message
		}
		return p.Text()
	}
	if d.router == nil {
		return d.send(rq, header, nil, at)
	}
	x, err := d.router.RoutePrompt(route, header, router.Prompt{Model: sh.model, Text: text,
		Chars: p.Chars, Held: d.held(sim.FleetRequest{Shape: sh.serve, Spans: p.Spans})})
	if err != nil {
		return err
	}
	return d.start(rq, header, x, nil, at)
}

// ReadsPrompts (driver.Prompted) is true when something on a request's
// way reads its prompt's ids or text: the router (Router.ReadsPrompts:
// a policy over the text, a PD routing_threshold), or whatever takes the
// engines' KV events (precise_prefix's index), which carry token ids.
// Receipts do not: their held tokens are the engines' own count (held),
// which a blind span's blocks give as well. Else only the engines' prefix
// caches read a prompt, by its blocks' identities, which a blind span
// (tokenizer.Span.Blind) gives without its ids. Asked as a run starts,
// after RecordReceipts.
func (d *Deployment) ReadsPrompts() bool {
	return d.kv.observed || d.router != nil && d.router.ReadsPrompts()
}

// shapes are a shell's engine legs: the serving leg's and, in
// prefill/decode, the prefill leg's (the router's own prefill body of the
// shell: one token, not streamed, KV kept for the decode side).
type shapes struct {
	serve, prefill *sim.Shape
	model          string // the body's model, as the router reads it
}

// shapesOf parses shell's shapes once per run.
func (d *Deployment) shapesOf(shell []byte, chat bool) (*shapes, error) {
	if sh, ok := d.shapes[string(shell)]; ok {
		return sh, nil
	}
	serve, err := d.fleet.Shape(0, shell, chat)
	if err != nil {
		return nil, err
	}
	sh := &shapes{serve: serve}
	b, err := pd.ParseBody(shell)
	if err != nil {
		return nil, fmt.Errorf("prefill leg: %w", err)
	}
	if m, ok := b["model"]; ok {
		if err := json.Unmarshal(m, &sh.model); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	if sh.prefill, err = d.fleet.Shape(0, b.Prefill(), chat); err != nil {
		return nil, fmt.Errorf("prefill leg: %w", err)
	}
	if d.shapes == nil {
		d.shapes = map[string]*shapes{}
	}
	d.shapes[string(shell)] = sh
	return sh, nil
}

// maxPresized bounds the token times a token-path request's slice is
// made for (8 bytes each).
const maxPresized = 4096

// promptLegs is a token-path request: its ids (spans) and length on its
// shapes.
type promptLegs struct {
	shapes *shapes
	spans  []tokenizer.Span
	max    int
}

// leg makes fr the serving (or prefill) leg of the prompt.
func (p *promptLegs) leg(fr *sim.FleetRequest, prefill bool) {
	// Every leg shares the workload's spans: the engines read them in
	// place, and the fleet's memo hashes a block the prefill leg hashed
	// again from its record.
	fr.Body, fr.Shape, fr.Spans, fr.MaxTokens = nil, p.shapes.serve, p.spans, p.max
	if prefill {
		fr.Shape, fr.MaxTokens = p.shapes.prefill, 0
	}
}
