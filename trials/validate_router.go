package trials

import (
	"errors"
	"fmt"

	"github.com/autoinfer/autoinfer/trials/field"
)

// validateRouter checks the router section of a trial that launches one.
func validateRouter(s *Spec, present func(string) bool, p *problems) {
	r := s.Router
	switch r.Launch {
	case LaunchEmbedded, LaunchProcess:
		if r.Binary != "" {
			p.add("router.binary", "only for launch external")
		}
	case LaunchExternal:
		if r.Binary == "" {
			p.add("router.binary", "required when launch is external (a vllm-router-compatible executable)")
		}
	default:
		p.add("router.launch", "must be one of embedded, process, external (got %q)", r.Launch)
	}
	for _, key := range []string{"worker_urls", "prefill", "decode", "port"} {
		if present("router." + key) {
			p.add("router."+key, "is set per trial from the target; remove it from the spec")
		}
	}
	switch pd := s.Topology.PD(); {
	case pd && !r.PDDisaggregation:
		p.add("router.pd_disaggregation", "must be true when topology sets prefill and decode")
	case !pd && r.PDDisaggregation:
		p.add("router.pd_disaggregation", "needs topology.prefill and topology.decode instead of topology.replicas")
	}
	if dp, rdp := s.Topology.Engine.DataParallelSize, r.IntraNodeDataParallelSize; (dp > 1 || rdp > 1) && max(dp, 1) != rdp {
		p.add("router.intra_node_data_parallel_size", "must equal topology.engine.data_parallel_size (%d), got %d", max(dp, 1), rdp)
	}

	// Validate the config the runner will build: this spec's settings with
	// placeholder worker URLs of the right counts.
	cfg := r.Config
	urls := func(n, offset int) []string {
		var us []string
		for i := range min(n, MaxWorkers) { // a larger count is reported by checkBounds
			us = append(us, fmt.Sprintf("http://127.0.0.1:%d", 1+offset+i))
		}
		return us
	}
	if s.Topology.PD() {
		cfg.PrefillURLs, cfg.DecodeURLs = urls(s.Topology.Prefill, 0), urls(s.Topology.Decode, s.Topology.Prefill)
	} else {
		cfg.WorkerURLs = urls(s.Topology.Replicas, 0)
	}
	// The worker lists are the runner's, not keys a spec can write: a
	// problem with them is a topology that does not fit pd_disaggregation,
	// reported above under the keys the user writes.
	for _, e := range field.Flatten(cfg.Validate()) {
		var fe *field.Error
		switch {
		case !errors.As(e, &fe):
			p.add("router", "%v", e)
		case !within(fe.Path, "router.worker_urls") && !within(fe.Path, "router.prefill") && !within(fe.Path, "router.decode"):
			p.add(fe.Path, "%s", fe.Msg)
		}
	}
}
