package cmd

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// kvEventsFlag is --kv-events WORKER_URL=tcp://HOST:PORT[,tcp://REPLAY[,TOPIC]]:
// repeatable; the first use replaces what a config file listed. It is a
// pflag.SliceValue so replayFlags can copy it over a file's config.
type kvEventsFlag struct {
	dst     *[]routerconfig.KVEventsSource
	changed bool
}

var _ pflag.SliceValue = (*kvEventsFlag)(nil)

func (f *kvEventsFlag) Set(s string) error {
	if !f.changed {
		*f.dst, f.changed = nil, true
	}
	return f.Append(s)
}

// Append adds one stream in the CLI form.
func (f *kvEventsFlag) Append(s string) error {
	src, err := routerconfig.ParseKVEventsSource(s)
	if err != nil {
		return err
	}
	*f.dst = append(*f.dst, src)
	return nil
}

// Replace sets the streams to vals, each in the CLI form.
func (f *kvEventsFlag) Replace(vals []string) error {
	*f.dst, f.changed = nil, true
	for _, v := range vals {
		if err := f.Append(v); err != nil {
			return err
		}
	}
	return nil
}

// GetSlice is the streams in the CLI form.
func (f *kvEventsFlag) GetSlice() []string {
	if f.dst == nil {
		return nil
	}
	out := make([]string, 0, len(*f.dst))
	for _, s := range *f.dst {
		out = append(out, s.String())
	}
	return out
}

func (f *kvEventsFlag) String() string { return "[" + strings.Join(f.GetSlice(), " ") + "]" }

func (*kvEventsFlag) Type() string { return "worker=endpoint" }
