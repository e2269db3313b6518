// Package depswarm is temporary: it pins every planned dependency so go.sum is complete while packages are written in parallel.
package depswarm

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/go-playground/validator/v10"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jmoiron/sqlx"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/option"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sync/errgroup"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
	_ "modernc.org/sqlite"
)
