package virtual

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/sim"
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
// candidate's held tokens counted by its engine at the decision (held):
// no index of the engines' caches and no KV events, so receipts read no
// prompt and a run may still send blind ones. Call it before the first
// Send; without a router there is no decision to explain.
func (d *Deployment) RecordReceipts() {
	if d.router == nil || d.receipts {
		return
	}
	d.receipts = true
	d.router.Receipts()
}

// held gives, for a route receipt, the prompt tokens the engine of a
// candidate (by its router id) holds of fr's prompt now (sim.HeldPrompt,
// hashed once for all the candidates): the candidate's rank's cache when
// the router addresses ranks, else any of the worker's ranks', as one
// stream of KV events would show them. Nil when receipts are off.
func (d *Deployment) held(fr sim.FleetRequest) func(id string) (int, bool) {
	if !d.receipts {
		return nil
	}
	p := d.fleet.HeldPrompt(fr)
	return func(id string) (int, bool) {
		url, rank := id, -1
		if d.dp > 1 {
			i := strings.LastIndexByte(id, '@')
			if i < 0 {
				return 0, false
			}
			r, err := strconv.Atoi(id[i+1:])
			if err != nil {
				return 0, false
			}
			url, rank = id[:i], r
		}
		w, ok := d.workers[url]
		if !ok {
			return 0, false
		}
		n, err := p.Held(w, rank)
		return n, err == nil
	}
}

func decisionOf(id int, header http.Header, x *router.Routed) Decision {
	warm := strings.HasSuffix(header.Get(driver.DefaultRunIDHeader), driver.WarmupRunIDSuffix)
	dec := Decision{ID: id, Warmup: warm, Worker: x.Worker, PD: x.PD, Outcome: int(x.Outcome), Receipt: x.Receipt}
	if x.PD {
		dec.Prefill = x.Prefill
	}
	return dec
}
