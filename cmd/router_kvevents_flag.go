package cmd

import (
	"strings"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// kvEventsFlag is --kv-events WORKER_URL=tcp://HOST:PORT[,tcp://REPLAY]:
// repeatable; the first use replaces what a config file listed.
type kvEventsFlag struct {
	dst     *[]routerconfig.KVEventsSource
	changed bool
}

func (f *kvEventsFlag) Set(s string) error {
	src, err := routerconfig.ParseKVEventsSource(s)
	if err != nil {
		return err
	}
	if !f.changed {
		*f.dst, f.changed = nil, true
	}
	*f.dst = append(*f.dst, src)
	return nil
}

func (f *kvEventsFlag) String() string {
	if f.dst == nil {
		return ""
	}
	var parts []string
	for _, s := range *f.dst {
		v := s.Worker + "=" + s.Endpoint
		if s.ReplayEndpoint != "" {
			v += "," + s.ReplayEndpoint
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, " ")
}

func (*kvEventsFlag) Type() string { return "worker=endpoint" }
