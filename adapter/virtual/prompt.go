package virtual

import (
	"fmt"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router/pd"
	"github.com/autoinfer/autoinfer/target/sim"
)

// The token path (driver.Prompted): the engines take a request's prompt
// as ids.
var _ driver.Prompted = (*Deployment)(nil)

// SendPrompt is Send of a request whose prompt comes as token ids: the
// router decides on its body as over HTTP, and each engine leg is the
// run's shell with the ids (sim.Shape), so no engine parses the body or
// tokenizes its 12k-token prompt. The body is not kept past the routing.
func (d *Deployment) SendPrompt(id int, route string, header http.Header, body []byte, p driver.Prompt, at time.Duration) error {
	sh, err := d.shapesOf(p.Shell, route == "/v1/chat/completions")
	if err != nil {
		return err
	}
	rq := &request{id: id, route: route, prompt: &promptLegs{shapes: sh, ids: p.IDs, max: p.MaxTokens}}
	return d.send(rq, header, body, at)
}

// shapes are a shell's engine legs: the serving leg's and, in
// prefill/decode, the prefill leg's (the router's own prefill body of the
// shell: one token, not streamed, KV kept for the decode side).
type shapes struct {
	serve, prefill *sim.Shape
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
	if sh.prefill, err = d.fleet.Shape(0, b.Prefill(), chat); err != nil {
		return nil, fmt.Errorf("prefill leg: %w", err)
	}
	if d.shapes == nil {
		d.shapes = map[string]*shapes{}
	}
	d.shapes[string(shell)] = sh
	return sh, nil
}

// promptLegs is a token-path request: its ids and length on its shapes.
type promptLegs struct {
	shapes *shapes
	ids    []int
	max    int
}

// leg makes fr the serving (or prefill) leg of the prompt.
func (p *promptLegs) leg(fr *sim.FleetRequest, prefill bool) {
	fr.Body, fr.Shape, fr.Prompt, fr.MaxTokens = nil, p.shapes.serve, p.ids, p.max
	if prefill {
		fr.Shape, fr.MaxTokens = p.shapes.prefill, 0
	}
}
