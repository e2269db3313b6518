package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/autoinfer/autoinfer/router/routerconfig"
)

// listFlag is a repeatable flag whose values parse into a config list:
// the first use replaces what a config file listed, later ones append. It
// is a pflag.SliceValue so replayFlags can copy it over a file's config.
type listFlag[T any] struct {
	dst     *[]T
	parse   func(string) (T, error)
	format  func(T) string
	typ     string
	changed bool
}

var _ pflag.SliceValue = (*listFlag[int])(nil)

func (f *listFlag[T]) Set(s string) error {
	if !f.changed {
		*f.dst, f.changed = nil, true
	}
	return f.Append(s)
}

// Append adds one value.
func (f *listFlag[T]) Append(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.dst = append(*f.dst, v)
	return nil
}

// Replace sets the list to vals.
func (f *listFlag[T]) Replace(vals []string) error {
	*f.dst, f.changed = nil, true
	for _, v := range vals {
		if err := f.Append(v); err != nil {
			return err
		}
	}
	return nil
}

// GetSlice is the list in the flag's form.
func (f *listFlag[T]) GetSlice() []string {
	out := make([]string, 0, len(*f.dst))
	for _, v := range *f.dst {
		out = append(out, f.format(v))
	}
	return out
}

func (f *listFlag[T]) String() string {
	if f.dst == nil {
		return "[]"
	}
	return "[" + strings.Join(f.GetSlice(), " ") + "]"
}

func (f *listFlag[T]) Type() string { return f.typ }

// kvEventsFlag is --kv-events WORKER_URL=tcp://HOST:PORT[,tcp://REPLAY[,TOPIC]].
func kvEventsFlag(dst *[]routerconfig.KVEventsSource) *listFlag[routerconfig.KVEventsSource] {
	return &listFlag[routerconfig.KVEventsSource]{dst: dst, parse: routerconfig.ParseKVEventsSource,
		format: routerconfig.KVEventsSource.String, typ: "worker=endpoint"}
}

// scorerFlag is --scorer NAME=WEIGHT.
func scorerFlag(dst *[]routerconfig.Scorer) *listFlag[routerconfig.Scorer] {
	return &listFlag[routerconfig.Scorer]{dst: dst, typ: "name=weight",
		parse: func(s string) (routerconfig.Scorer, error) {
			name, w, ok := strings.Cut(s, "=")
			weight, err := strconv.ParseFloat(w, 64)
			if !ok || err != nil {
				return routerconfig.Scorer{}, fmt.Errorf("%q: want NAME=WEIGHT, e.g. precise_prefix=2", s)
			}
			return routerconfig.Scorer{Name: name, Weight: weight}, nil
		},
		format: routerconfig.Scorer.String,
	}
}
