package router

import (
	"net/http"

	"github.com/autoinfer/autoinfer/router/pd"
	"github.com/autoinfer/autoinfer/router/policy"
)

// pdStart is how a PD request begins on either path — disaggregate over
// HTTP, Route in virtual time — so their leg order cannot drift apart.
type pdStart struct {
	body pd.Body
	// local: the prompt is under routing_threshold and goes to a decode
	// worker alone, which prefills it.
	local bool
	// decode is the decode worker, chosen before any prefill worker: the
	// nccl request id names both, and an empty decode pool must fail
	// before a prefill is wasted. The prefill worker is chosen next.
	decode  target
	outcome policy.Outcome
	receipt *policy.Receipt // the decode decision's, when asked
}

// start parses raw, applies routing_threshold and chooses the decode
// worker; ok is false when the decode pool had none to choose.
func (dis *pdRouter) start(r *Router, raw []byte, pr policy.Request) (s pdStart, ok bool, err *apiError) {
	b, perr := pd.ParseBody(raw)
	if perr != nil {
		return s, false, newAPIError(http.StatusBadRequest, ErrTypeInvalidRequest, perr.Error())
	}
	s.body = b
	if dis.local(b) {
		s.local = true
		return s, true, nil
	}
	var d policy.Decision
	s.decode, d, ok = r.choose(dis.decode, nil, pr)
	s.outcome, s.receipt = d.Outcome, d.Receipt
	return s, ok, nil
}
