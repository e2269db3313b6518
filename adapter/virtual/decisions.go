package virtual

import (
	"net/http"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/router"
)

// Decision is one routing decision of a virtual run: the worker (and, for
// prefill/decode, the prefill worker) the router's own code chose. ID is
// the driver's request index within its phase: Warmup tells the warm-up's
// requests (the ready check included) from the measured ones.
type Decision struct {
	ID      int           `json:"id"`
	Warmup  bool          `json:"warmup,omitempty"`
	Worker  router.Target `json:"worker"`
	PD      bool          `json:"pd"`
	Prefill router.Target `json:"prefill,omitzero"`
	Outcome int           `json:"outcome"`
}

// RecordDecisions makes the deployment report every routing decision to fn
// as it is made.
func (d *Deployment) RecordDecisions(fn func(Decision)) { d.record = fn }

func decisionOf(id int, header http.Header, x *router.Routed) Decision {
	warm := strings.HasSuffix(header.Get(driver.DefaultRunIDHeader), driver.WarmupRunIDSuffix)
	dec := Decision{ID: id, Warmup: warm, Worker: x.Worker, PD: x.PD, Outcome: int(x.Outcome)}
	if x.PD {
		dec.Prefill = x.Prefill
	}
	return dec
}
