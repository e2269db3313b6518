package virtual

import "github.com/autoinfer/autoinfer/router"

// Decision is one routing decision of a virtual run: the worker (and, for
// prefill/decode, the prefill worker) the router's own code chose.
type Decision struct {
	ID      int           `json:"id"`
	Worker  router.Target `json:"worker"`
	PD      bool          `json:"pd"`
	Prefill router.Target `json:"prefill,omitzero"`
	Outcome int           `json:"outcome"`
}

// RecordDecisions makes the deployment report every routing decision to fn
// as it is made.
func (d *Deployment) RecordDecisions(fn func(Decision)) { d.record = fn }

func decisionOf(id int, x *router.Routed) Decision {
	dec := Decision{ID: id, Worker: x.Worker, PD: x.PD, Outcome: int(x.Outcome)}
	if x.PD {
		dec.Prefill = x.Prefill
	}
	return dec
}
