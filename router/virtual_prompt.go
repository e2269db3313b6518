package router

import (
	"net/http"

	"github.com/autoinfer/autoinfer/router/policy"
)

// Prompt is an inference request without its body, as the virtual clock's
// token path hands it over: what the router's description of a request
// reads from a body, given rather than parsed.
type Prompt struct {
	// Model is the body's model.
	Model string
	// Text is the prompt text the HTTP path extracts from the body
	// (parseOpenAI: a completions prompt as it is; for chat, each
	// message's role, a colon, its content and a newline). It is called
	// only when a policy reads the text (cache_aware), so a run whose
	// policies do not builds none.
	Text func() string
	// Chars counts the prompt's characters (runes) as routing_threshold
	// counts them in the body (pd.Body.EstimateTokens: the text of the
	// prompt or of the messages' contents); called only under a threshold.
	Chars func() int
	// Held, when not nil, gives the prompt tokens the engine of a
	// candidate (by its id, "url" or "url@rank") holds in its GPU prefix
	// cache now, as the engine counts them: the receipt's held tokens then
	// come from it instead of the router's index of the engines' caches
	// (Receipts), so receipts read no text.
	Held func(id string) (tokens int, ok bool)
}

// RoutePrompt is Route for a request given as p instead of its body: the
// same request description (model, text, hash key, SLO headers), policy
// objects, decision counts and PD threshold (Chars() / 4, as
// EstimateTokens), with no body to parse. Routed.PrefillBody is nil: the
// caller builds the prefill leg from its own shape of the body.
func (r *Router) RoutePrompt(route string, header http.Header, p Prompt) (*Routed, error) {
	req := &http.Request{Method: http.MethodPost, Header: header, RemoteAddr: "127.0.0.1:1"}
	var pr policy.Request
	need := r.policyNeeds()
	if need.Text {
		pr.Model, pr.Text = p.Model, p.Text()
	}
	if need.HashKey {
		// The driver's address: the body never keys a virtual request.
		pr.HashKey = hashKey(req, nil, r.keys.hasAPI)
	}
	if need.SLO {
		var apiErr *apiError
		if pr.SLO, apiErr = sloHeaders(req); apiErr != nil {
			return nil, apiErr
		}
	}
	x := &Routed{r: r, held: p.Held}
	if r.pd == nil || !pdRoutes[route] {
		return x.local(pr)
	}
	dis := r.pd
	if dis.threshold > 0 && dis.below(p.Chars()/4) {
		return x.local(pr)
	}
	t, d, ok := r.choose(dis.decode, nil, pr)
	if !ok {
		return nil, errNoWorkers
	}
	x.worker, x.Outcome, x.Receipt = t, d.Outcome, x.heldBy(d.Receipt)
	return x.withPrefill(pr)
}

// ReadsPrompts reports whether RoutePrompt ever reads a prompt's text or
// length: a policy that matches on the text (Needs.Text: cache_aware,
// precise_prefix, a weighted prefix scorer) or a PD routing_threshold
// (Chars); receipts read nothing of it (their held tokens are the
// caller's: Prompt.Held). When not, the caller may route a prompt it never
// drew.
func (r *Router) ReadsPrompts() bool {
	return r.policyNeeds().Text || r.pd != nil && r.pd.threshold > 0
}

// heldBy is rc with every candidate's held tokens from x's Prompt.Held,
// when given.
func (x *Routed) heldBy(rc *Receipt) *Receipt {
	if x.held != nil && rc != nil {
		rc.SetHeldBy(x.held)
	}
	return rc
}

// local starts x on the pool that serves a request without a prefill hop:
// the collocated pool, or under PD the decode pool (which prefills it).
func (x *Routed) local(pr policy.Request) (*Routed, error) {
	x.pool = x.r.pool
	if x.r.pd != nil {
		x.pool = x.r.pd.decode
	}
	return x.start(pr)
}

// withPrefill completes a PD decision whose decode worker x holds: the
// prefill worker, chosen by its pool's policy, whose load is held from now
// until EndPrefill; the decode worker's is held from EndPrefill.
func (x *Routed) withPrefill(pr policy.Request) (*Routed, error) {
	dis := x.r.pd
	x.pool = dis.decode
	var ok bool
	if x.prefill, _, ok = x.r.choose(dis.prefill, nil, pr); !ok {
		return nil, errNoWorkers
	}
	x.PD = true
	x.pg = dis.prefill.acquire(x.prefill)
	x.Worker, x.Prefill = x.worker.public(), x.prefill.public()
	return x, nil
}
