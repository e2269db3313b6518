package trials

import (
	"strings"

	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/simtarget"
)

// validateTarget checks that only the chosen kind's keys are set and that
// they are usable.
func validateTarget(s *Spec, present func(string) bool, p *problems) {
	t := s.Target
	owner := map[string]string{
		"profile": KindSim, "profile_overrides": KindSim,
		"workers": KindStatic, "prefill": KindStatic, "decode": KindStatic, "health_timeout": KindStatic,
		"command": KindProcess, "host": KindProcess, "startup_timeout": KindProcess,
		"stop_grace_period": KindProcess, "env": KindProcess, "log_dir": KindProcess,
	}
	for key, kind := range owner {
		if kind != t.Kind && present("target."+key) {
			p.add("target."+key, "only for kind %s (kind is %s)", kind, t.Kind)
		}
	}
	if t.Kind == KindSim && present("target.health_path") {
		p.add("target.health_path", "only for kinds static and process")
	}
	for key, d := range map[string]int64{
		"health_timeout": int64(t.HealthTimeout), "startup_timeout": int64(t.StartupTimeout), "stop_grace_period": int64(t.StopGracePeriod),
	} {
		if d < 0 {
			p.add("target."+key, "must be a positive duration such as 30s")
		}
	}
	switch t.Kind {
	case KindSim:
		if _, err := sim.LookupProfile(t.Profile); err != nil {
			p.add("target.profile", "%v", err)
		} else if _, err := simtarget.ResolveProfile(t.Profile, t.ProfileOverrides); err != nil {
			addKeyed(p, "target.profile_overrides", err)
		}
	case KindStatic:
		if len(t.Workers) > 0 && (len(t.Prefill) > 0 || len(t.Decode) > 0) {
			p.add("target.workers", "give either workers or prefill and decode URLs, not both")
		}
		if len(t.Workers) == 0 && len(t.Prefill) == 0 && len(t.Decode) == 0 {
			p.add("target.workers", "required for kind static (or prefill and decode)")
		}
		topo := s.Topology
		for _, c := range []struct {
			key  string
			urls int
			n    int
		}{{"replicas", len(t.Workers), topo.Replicas}, {"prefill", len(t.Prefill), topo.Prefill}, {"decode", len(t.Decode), topo.Decode}} {
			if c.urls != c.n && present("topology."+c.key) {
				p.add("topology."+c.key, "is %d but target lists %d URLs for that role", c.n, c.urls)
			}
		}
	case KindProcess:
		if t.Command == "" {
			p.add("target.command", "required for kind process, e.g. \"vllm serve {model} --port {port} {engine_args}\"")
			return
		}
		tmpl, err := process.ParseTemplate(t.Command)
		if err != nil {
			p.add("target.command", "%v", err)
			return
		}
		envPort := false
		for k, v := range t.Env {
			if err := process.CheckEnvValue(v); err != nil {
				p.add("target.env."+k, "%v", err)
			}
			envPort = envPort || strings.Contains(v, "{port}")
		}
		if !tmpl.Uses("port") && !envPort {
			p.add("target.command", "must pass {port} to the server (the target picks a free port per worker)")
		}
		if args := s.Topology.Engine.Args(); len(args) > 0 && !tmpl.Uses("engine_args") {
			p.add("target.command", "has no {engine_args}, so topology.engine settings (%s) would be ignored", strings.Join(args, " "))
		}
	}
}

// validateTopology checks the counts and the prefill/decode pairing.
func validateTopology(s *Spec, present func(string) bool, p *problems) {
	topo := s.Topology
	switch {
	case topo.PD() && topo.Replicas > 0:
		p.add("topology.replicas", "must not be set with prefill and decode (they replace it)")
	case topo.PD() && topo.Prefill < 1:
		p.add("topology.prefill", "must be ≥ 1 when decode is set")
	case topo.PD() && topo.Decode < 1:
		p.add("topology.decode", "must be ≥ 1 when prefill is set")
	case !topo.PD() && topo.Replicas < 1 && (present("topology.replicas") || s.Target.Kind != KindStatic):
		p.add("topology.replicas", "must be ≥ 1")
	}
}
