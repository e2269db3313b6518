package cmd

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/autoinfer/autoinfer/target/sim/calibrate"
)

// calibrateObserveFlags are `autoinfer sim calibrate --observe`'s flags.
type calibrateObserveFlags struct {
	url, base, name, hardware, profileFile string
	budget                                 time.Duration
	seed                                   uint64
	rounds, maxConcurrency                 int
	maxError                               float64
}

func addCalibrateObserveFlags(cmd *cobra.Command, f *calibrateObserveFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "observe", "", "base URL of a live OpenAI-compatible server to fit a profile to (instead of --vidur)")
	fl.StringVar(&f.base, "base", "h100-llama3-8b", "--observe: the built-in profile whose step model is fitted")
	fl.StringVar(&f.name, "profile-name", "", "the calibrated profile's name (default <base>-calibrated)")
	fl.StringVar(&f.hardware, "hardware", "", "--observe: the server's hardware, as you declare it (recorded, e.g. \"1x H100 80GB SXM, driver 550\")")
	fl.StringVar(&f.profileFile, "profile-file", "", "--observe: the profile file to write (required)")
	fl.DurationVar(&f.budget, "budget", 5*time.Minute, "--observe: bound on the probe's time against the server")
	fl.Uint64Var(&f.seed, "seed", 1, "--observe: the probe's seed (prompts and group order)")
	fl.IntVar(&f.rounds, "rounds", 0, "--observe: repetitions of the probe plan (0: as many as the budget allows)")
	fl.IntVar(&f.maxConcurrency, "max-concurrency", 16, "--observe: the largest concurrency probed (powers of two up to it)")
	fl.Float64Var(&f.maxError, "max-error", 0.10, "--observe: held-out TTFT or TPOT p50 error above which the profile is marked unfit")
}

// runSimCalibrateObserve probes the server, fits and writes the profile
// file beside its path first and renames it: an interrupted or failed run
// leaves nothing.
func runSimCalibrateObserve(cmd *cobra.Command, f *calibrateObserveFlags) error {
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--observe %q: want an http(s) base URL such as http://127.0.0.1:8000", f.url)
	}
	switch {
	case f.profileFile == "":
		return usageErr("--profile-file: required with --observe (where the calibrated profile goes)")
	case f.budget <= 0:
		return usageErr("--budget %v: must be > 0", f.budget)
	case f.maxConcurrency < 1:
		return usageErr("--max-concurrency %d: must be >= 1", f.maxConcurrency)
	case f.rounds < 0:
		return usageErr("--rounds %d: must be >= 0", f.rounds)
	case !(f.maxError > 0):
		return usageErr("--max-error %v: must be > 0", f.maxError)
	}
	res, err := calibrate.Calibrate(cmd.Context(), calibrate.Config{HTTP: &http.Client{}, URL: u.String(), Base: f.base, Name: f.name,
		Hardware: f.hardware, Seed: f.seed, Budget: f.budget, Rounds: f.rounds, MaxConcurrency: f.maxConcurrency,
		MaxError: f.maxError, Progress: cmd.ErrOrStderr()})
	if err != nil {
		if cmd.Context().Err() != nil {
			return withCode(ExitInterrupted, fmt.Errorf("calibration interrupted, nothing written: %w", err))
		}
		return withCode(ExitInfra, fmt.Errorf("calibrating against %s: %w", u, err))
	}
	if err := writeFileAtomic(f.profileFile, res.File); err != nil {
		return withCode(ExitInfra, fmt.Errorf("writing %s: %w", f.profileFile, err))
	}
	out := cmd.OutOrStdout()
	for _, c := range res.Fit.Coefficients {
		fmt.Fprintf(out, "%-28s %12.5g ± %.2g\n", c.Name, c.Value, c.StdErr)
	}
	fmt.Fprintf(out, "held-out error (%d groups): %v\n", res.HeldOutGroups, res.HeldOut)
	fmt.Fprintf(out, "HTTP path outside the engine's steps: %.3g ms (set http_overhead_ms to it where this profile predicts requests over the same path)\n",
		float64(res.PathOverhead.Microseconds())/1e3)
	if res.Overloaded > 0 {
		fmt.Fprintf(out, "%d of %d probe groups ran late on this host\n", res.Overloaded, len(res.Observed))
	}
	fmt.Fprintf(out, "wrote %s\n", f.profileFile)
	if res.Unfit != "" {
		return withCode(ExitFailed, fmt.Errorf("the profile is unfit for %s; the profile file says so and is refused where named: %s", u, res.Unfit))
	}
	return nil
}
