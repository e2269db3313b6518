package process

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Kind is the name trial specs give this target (target.kind: process).
const Kind = "process"

// Defaults for Options' zero values.
const (
	DefaultStartupTimeout  = 10 * time.Minute // vLLM loading a large model
	DefaultStopGracePeriod = 30 * time.Second
	DefaultHost            = "127.0.0.1"
)

// Upper bounds of the options (docs/spec.md).
const (
	MaxStartupTimeout  = 24 * time.Hour
	MaxStopGracePeriod = time.Hour
	MaxCommandLen      = 64 << 10 // bytes of the command template
	MaxEnv             = 256      // env entries
	maxPathLen         = 4096
)

// Options configure the process target; they are also its keys in a trial
// spec's target section.
type Options struct {
	// Command is the template run once per worker (see ParseTemplate).
	Command string `yaml:"command" json:"command,omitempty"`
	// Host is where workers listen ({host}) and where health probes go.
	Host string `yaml:"host" json:"host,omitempty"`
	// StartupTimeout bounds each worker's wait for health.
	StartupTimeout time.Duration `yaml:"startup_timeout" json:"startup_timeout,omitempty"`
	// StopGracePeriod is how long a worker may take to exit after SIGTERM
	// before its process group is killed.
	StopGracePeriod time.Duration `yaml:"stop_grace_period" json:"stop_grace_period,omitempty"`
	// Env is added to autoinfer's own environment; values may use
	// placeholders ("CUDA_VISIBLE_DEVICES": "{index}").
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// LogDir receives one {role}-{rank}.log per worker (stdout and stderr).
	// Empty means a new temporary directory per deployment, kept after
	// Close so the logs can be read.
	LogDir string `yaml:"log_dir" json:"log_dir,omitempty"`
	// HealthPath is probed with GET until it answers 200.
	HealthPath string `yaml:"health_path" json:"health_path,omitempty"`
	// Logger reports starts and stops; nil discards.
	Logger *slog.Logger `yaml:"-" json:"-"`
	// Source optionally names a profile of the servers, as the static
	// target's does: each real-time trial is then replayed on the virtual
	// clock as its prediction.
	simtarget.Source `yaml:",inline"`
}

var _ target.ProfiledWorkers = (*Options)(nil)

// Default fills in the host, the health path, the timeouts and a
// calibration's budget.
func (o *Options) Default() {
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.HealthPath == "" {
		o.HealthPath = target.DefaultHealthPath
	}
	if o.StartupTimeout == 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.StopGracePeriod == 0 {
		o.StopGracePeriod = DefaultStopGracePeriod
	}
	o.DefaultCalibration()
}

// WithProfileFile is a copy of o whose profile is the file at path (a
// calibration's): what the trial's virtual replay runs.
func (o *Options) WithProfileFile(path string) target.Options {
	c := *o
	c.Source = o.Calibrated(path)
	return &c
}

// Validate checks the command template and the env values, that the
// server is told its port, and that topo's engine settings reach it.
func (o *Options) Validate(topo target.Topology) error {
	var l field.Errors
	if o.Host != "" {
		l.Check(field.Host("host", o.Host))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
		max time.Duration
	}{{"startup_timeout", o.StartupTimeout, MaxStartupTimeout}, {"stop_grace_period", o.StopGracePeriod, MaxStopGracePeriod}} {
		if d.v < 0 {
			l.Add(d.key, "must be a positive duration such as 30s")
		}
		l.Check(field.AtMost(d.key, d.v, d.max))
	}
	l.Check(
		field.MaxLen("command", o.Command, MaxCommandLen),
		field.MaxItems("env", len(o.Env), MaxEnv),
		field.MaxLen("log_dir", o.LogDir, maxPathLen),
		field.MaxLen("health_path", o.HealthPath, maxPathLen),
	)
	if o.HealthPath != "" {
		l.Check(field.AbsPath("health_path", o.HealthPath))
	}
	envPort := false
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		l.Check(field.MaxLen("env."+k, o.Env[k], maxPathLen))
		if err := CheckEnvValue(o.Env[k]); err != nil {
			l.Add("env."+k, "%v", err)
		}
		envPort = envPort || strings.Contains(o.Env[k], "{port}")
	}
	l.Check(o.validateCommand(topo, envPort))
	l.Nest("", o.Check(topo))
	return l.Err()
}

// validateCommand checks the template; envPort says an env value passes
// {port} instead.
func (o *Options) validateCommand(topo target.Topology, envPort bool) error {
	if o.Command == "" {
		return field.Errorf("command", "required for kind process, e.g. \"vllm serve {model} --port {port} {engine_args}\"")
	}
	tmpl, err := ParseTemplate(o.Command)
	switch {
	case err != nil:
		return field.Errorf("command", "%v", err)
	case !tmpl.Uses("port") && !envPort:
		return field.Errorf("command", "must pass {port} to the server (the target picks a free port per worker)")
	}
	if args := topo.Engine.Args(); len(args) > 0 && !tmpl.Uses("engine_args") {
		return field.Errorf("command", "has no {engine_args}, so topology.engine settings (%s) would be ignored", strings.Join(args, " "))
	}
	return nil
}

// Provisioner builds the process target; log reports starts and stops.
func (o *Options) Provisioner(log *slog.Logger) (target.Provisioner, error) {
	opts := *o
	opts.Logger = log
	p, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return p, nil
}
