package failure

import "fmt"

// KindTargetNotReady names TargetNotReady: the deployment refused the driver's ready check.
const KindTargetNotReady Kind = "TargetNotReady"

// TargetNotReady is a failed ready check: before the warm-up, the driver's ready-check request got
// a 4xx (a wrong model name, path or key) or no success within its
// timeout, so no warm-up or measured request was sent. Message is the
// server's own error message.
type TargetNotReady struct {
	Status   int    `json:"status,omitempty"`
	Type     string `json:"type,omitempty"`
	Message  string `json:"message"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

// Kind is KindTargetNotReady.
func (TargetNotReady) Kind() Kind { return KindTargetNotReady }

func (f TargetNotReady) Error() string {
	if f.TimedOut {
		return fmt.Sprintf("target not ready: no successful answer to the ready check (last: HTTP %d %s: %s)", f.Status, f.Type, f.Message)
	}
	return fmt.Sprintf("target refused the ready check: HTTP %d %s: %s", f.Status, f.Type, f.Message)
}

// notReadyRule: a failed ready check explains everything after it (no
// request was measured), so it comes right after the start-up rules.
func notReadyRule(o *Observation) Failure {
	if o.NotReady == nil {
		return nil
	}
	return *o.NotReady
}
