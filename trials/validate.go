package trials

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-playground/validator/v10"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/simtarget"
)

// nameRE keeps trial names safe in file names, ledger queries and the
// "base/path=value" names of matrix trials.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// newValidator checks struct tags, reporting fields by their YAML names.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			return "-"
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	return v
}

// validate checks s (already defaulted) and records every problem in p.
func validate(s *Spec, base string, present func(string) bool, p *problems) {
	if base == "" {
		p.add("name", "required")
	} else if !nameRE.MatchString(base) {
		p.add("name", "must be letters, digits, '.', '_' or '-' (got %q)", base)
	}
	if err := newValidator().Struct(s); err != nil {
		var ves validator.ValidationErrors
		if !errors.As(err, &ves) {
			p.add("", "validating: %v", err)
		}
		for _, fe := range ves {
			_, path, _ := strings.Cut(fe.Namespace(), ".") // drop the root type
			p.add(path, "%s", describe(fe))
		}
	}
	validateTarget(s, present, p)
	validateTopology(s, present, p)
	if s.RouterLaunched() {
		validateRouter(s, present, p)
	}
	validateWorkload(s.Workload, p)
	validateChecks(s, p)
	validateGate(s.Gate, p)
}

// describe turns a validator failure into a short message.
func describe(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "required"
	case "oneof":
		return fmt.Sprintf("must be one of %s (got %q)", strings.ReplaceAll(fe.Param(), " ", ", "), fe.Value())
	case "gte", "min":
		return fmt.Sprintf("must be ≥ %s (got %v)", fe.Param(), fe.Value())
	case "gt":
		return fmt.Sprintf("must be > %s (got %v)", fe.Param(), fe.Value())
	case "lte", "max":
		return fmt.Sprintf("must be ≤ %s (got %v)", fe.Param(), fe.Value())
	case "http_url":
		return fmt.Sprintf("must be an http(s) URL (got %q)", fe.Value())
	case "startswith":
		return fmt.Sprintf("must start with %q (got %q)", fe.Param(), fe.Value())
	case "hostname_rfc1123|ip":
		return fmt.Sprintf("must be a host name or IP address (got %q)", fe.Value())
	}
	return fmt.Sprintf("fails %q (got %v)", fe.Tag(), fe.Value())
}

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
		for i := range n {
			us = append(us, fmt.Sprintf("http://127.0.0.1:%d", 1+offset+i))
		}
		return us
	}
	if s.Topology.PD() {
		cfg.PrefillURLs, cfg.DecodeURLs = urls(s.Topology.Prefill, 0), urls(s.Topology.Decode, s.Topology.Prefill)
	} else {
		cfg.WorkerURLs = urls(s.Topology.Replicas, 0)
	}
	if err := cfg.Validate(); err != nil {
		for _, e := range unjoin(err) {
			var fe *router.FieldError
			if errors.As(e, &fe) {
				if !strings.HasPrefix(fe.Key, "router.worker_urls") && !strings.HasPrefix(fe.Key, "router.prefill[") && !strings.HasPrefix(fe.Key, "router.decode[") {
					p.add(fe.Key, "%s", fe.Message)
				}
				continue
			}
			p.add("router", "%v", e)
		}
	}
}

// unjoin splits an errors.Join result.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// validateWorkload runs the driver's own checks, whose messages start with
// the offending key.
func validateWorkload(w Workload, p *problems) {
	if w.Kind == "" {
		p.add("workload.kind", "required (random, shared_prefix, multi_turn or trace)")
	} else if err := w.Workload.Validate(); err != nil {
		addKeyed(p, "workload", err)
	}
	if err := w.Arrival.Validate(); err != nil {
		addKeyed(p, "workload.arrival", err)
	}
	if w.Endpoint != EndpointCompletions && w.Endpoint != EndpointChat {
		p.add("workload.endpoint", "must be %s or %s (got %q)", EndpointCompletions, EndpointChat, w.Endpoint)
	}
	if w.Kind == workload.Random && w.NumPrompts == 0 {
		p.add("workload.num_prompts", "required for kind random (it has no natural count)")
	}
}

// addKeyed records a "key: message" error under section.key.
func addKeyed(p *problems, section string, err error) {
	key, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok || strings.ContainsAny(key, " \"") {
		p.add(section, "%v", err)
		return
	}
	p.add(section+"."+key, "%s", msg)
}

// validateChecks parses the CI checks: assertions, baseline and tolerance.
func validateChecks(s *Spec, p *problems) {
	for i, a := range s.Assert {
		if _, err := ParseAssertion(a); err != nil {
			p.add(fmt.Sprintf("assert[%d]", i), "%v", err)
		}
	}
	if s.Baseline == "" {
		if s.Tolerance != "" {
			p.add("tolerance", "needs a baseline")
		}
		if len(s.BaselineMetrics) > 0 {
			p.add("baseline_metrics", "needs a baseline")
		}
		return
	}
	if _, err := ParseTolerance(s.Tolerance); err != nil {
		p.add("tolerance", "%v", err)
	}
	for i, m := range s.BaselineMetrics {
		if !IsMetric(m) {
			p.add(fmt.Sprintf("baseline_metrics[%d]", i), "unknown metric %q", m)
		}
	}
}

func validateGate(g Gate, p *problems) {
	switch g.Reference {
	case ReferenceNone:
		return
	case ReferenceURL:
		if g.URL == "" {
			p.add("gate.url", "required when reference is url")
		}
	case ReferenceSim:
		if g.URL != "" {
			p.add("gate.url", "only when reference is url")
		}
	}
	if g.Prompts.N() < 1 {
		p.add("gate.prompts", "must be ≥ 1 prompt")
	}
	for i, t := range g.Prompts.List {
		if strings.TrimSpace(t) == "" {
			p.add(fmt.Sprintf("gate.prompts[%d]", i), "must not be empty")
		}
	}
	if !(g.KLThreshold > 0) {
		p.add("gate.kl_threshold", "must be > 0 (got %v)", g.KLThreshold)
	}
}
