package static

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Kind is the name trial specs give this target (target.kind: static).
const Kind = "static"

// DefaultHealthTimeout bounds the health wait when Options leaves it zero.
const DefaultHealthTimeout = 30 * time.Second

// Upper bounds of the options (docs/spec.md).
const (
	MaxWorkers       = 1024 // URLs of each role
	MaxHealthTimeout = 24 * time.Hour
	maxURLLen        = 4096
)

// Options list the workers by role; they are also the static target's keys
// in a trial spec's target section.
type Options struct {
	// Workers are the base URLs of collocated workers.
	Workers []string `yaml:"workers" json:"workers,omitempty"`
	Prefill []string `yaml:"prefill" json:"prefill,omitempty"`
	Decode  []string `yaml:"decode" json:"decode,omitempty"`
	// HealthTimeout bounds the wait for every worker to answer 200.
	HealthTimeout time.Duration `yaml:"health_timeout" json:"health_timeout,omitempty"`
	// HealthPath is probed with GET on every worker (default /health).
	HealthPath string `yaml:"health_path" json:"health_path,omitempty"`
	// Client sends the probes; nil means a default client.
	Client *http.Client `yaml:"-" json:"-"`
	// Source optionally names a profile of the servers (profile,
	// profile_file or model_config with gpu, profile_overrides: the sim
	// target's keys): each real-time trial is then replayed on the
	// virtual clock with simulated engines of it, and its row carries
	// that prediction (predicted_by).
	simtarget.Source `yaml:",inline"`
}

var (
	_ target.ListedWorkers   = (*Options)(nil)
	_ target.ProfiledWorkers = (*Options)(nil)
)

// Default fills in the health path and timeout, and a calibration's budget.
func (o *Options) Default() {
	if o.HealthPath == "" {
		o.HealthPath = target.DefaultHealthPath
	}
	if o.HealthTimeout == 0 {
		o.HealthTimeout = DefaultHealthTimeout
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

// Validate checks the URLs and the health settings. Whether the topology's
// counts match the URLs is the spec's to check (see Listed), since it knows
// which counts the spec wrote.
func (o *Options) Validate(topo target.Topology) error {
	var l field.Errors
	if len(o.Workers) > 0 && (len(o.Prefill) > 0 || len(o.Decode) > 0) {
		l.Add("workers", "give either workers or prefill and decode URLs, not both")
	}
	if len(o.Workers) == 0 && len(o.Prefill) == 0 && len(o.Decode) == 0 {
		l.Add("workers", "required for kind static (or prefill and decode)")
	}
	for _, role := range []struct {
		key  string
		urls []string
	}{{"workers", o.Workers}, {"prefill", o.Prefill}, {"decode", o.Decode}} {
		if len(role.urls) > MaxWorkers {
			l.Check(field.MaxItems(role.key, len(role.urls), MaxWorkers))
			continue
		}
		for i, u := range role.urls {
			l.Check(field.MaxLen(fmt.Sprintf("%s[%d]", role.key, i), u, maxURLLen))
		}
		l.Check(field.HTTPURLs(role.key, role.urls)...)
		l.Check(field.UniqueURLs(role.key, role.urls))
	}
	if o.HealthTimeout < 0 {
		l.Add("health_timeout", "must be a positive duration such as 30s")
	}
	l.Check(field.AtMost("health_timeout", o.HealthTimeout, MaxHealthTimeout), field.MaxLen("health_path", o.HealthPath, maxURLLen))
	if o.HealthPath != "" {
		l.Check(field.AbsPath("health_path", o.HealthPath))
	}
	l.Nest("", o.Check(topo))
	return l.Err()
}

// Listed returns the number of URLs of each role.
func (o *Options) Listed() target.Topology {
	return target.Topology{Replicas: len(o.Workers), Prefill: len(o.Prefill), Decode: len(o.Decode)}
}

// Provisioner builds the static target; it logs nothing.
func (o *Options) Provisioner(*slog.Logger) (target.Provisioner, error) { return New(*o), nil }
