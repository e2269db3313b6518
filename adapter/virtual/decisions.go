package virtual

import (
	"net/http"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/policy"
)

// Decision is one routing decision of a virtual run: the worker (and, for
// prefill/decode, the prefill worker) the router's own code chose. ID is
// the driver's request index within its phase: Warmup tells the warm-up's
// requests (the ready check included) from the measured ones. Receipt is
// the decision's route receipt when RecordReceipts turned them on.
type Decision struct {
	ID      int             `json:"id"`
	Warmup  bool            `json:"warmup,omitempty"`
	Worker  router.Target   `json:"worker"`
	PD      bool            `json:"pd"`
	Prefill router.Target   `json:"prefill,omitzero"`
	Outcome int             `json:"outcome"`
	Receipt *router.Receipt `json:"receipt,omitempty"`
}

// RecordDecisions makes the deployment report every routing decision to fn
// as it is made.
func (d *Deployment) RecordDecisions(fn func(Decision)) { d.record = fn }

// RecordReceipts makes every decision carry its route receipt, each
// candidate's held tokens read from an index of the engines' real caches
// (fed by their KV events at the instant they happen). Call it before the
// first Send; without a router there is no decision to explain.
func (d *Deployment) RecordReceipts() {
	if d.router == nil || d.kv.held != nil {
		return
	}
	d.kv.held = policy.NewBlockIndex()
	d.observeKV()
	d.router.Receipts(d.kv.held)
}

func decisionOf(id int, header http.Header, x *router.Routed) Decision {
	warm := strings.HasSuffix(header.Get(driver.DefaultRunIDHeader), driver.WarmupRunIDSuffix)
	dec := Decision{ID: id, Warmup: warm, Worker: x.Worker, PD: x.PD, Outcome: int(x.Outcome), Receipt: x.Receipt}
	if x.PD {
		dec.Prefill = x.Prefill
	}
	return dec
}
