package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/sim"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
)

// simServeFlags are the flags of `autoinfer sim serve`.
type simServeFlags struct {
	host, model, profile, role string
	gpu, modelConfig           string
	profileFile                string
	port, replicas             int
	eng                        engine.Config
	prefixCaching              bool
	prof                       sim.Profile // overrides, applied when the flag is set
	flipRate                   float64
	errorRates                 []string
	addedLatency, stallFor     time.Duration
	stall, refuse, enableAdmin bool
	stallAfter                 int
	kvHold                     time.Duration
	offload                    sim.KVOffload
	limits                     sim.Limits
	kvEvents                   string
}

func newSimServeCmd() *cobra.Command {
	var f simServeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve simulated vLLM engines on loopback ports",
		Long: `Serve N independent simulated vLLM engines on consecutive ports. On start it
prints one JSON line per engine to stdout ({"replica","url","model",…}) so
scripts can read the addresses; it stops cleanly on SIGINT or SIGTERM.`,
		Example: `  # one engine on 127.0.0.1:8000 with the realistic 8B/H100 profile
  autoinfer sim serve

  # four engines on free ports, fast test profile
  autoinfer sim serve --replicas 4 --port 0 --profile fast

  # a prefill and a decode engine for PD disaggregation
  autoinfer sim serve --port 8100 --role prefill &
  autoinfer sim serve --port 8200 --role decode

  # a slower link and 10 % of requests answered 503
  autoinfer sim serve --link-gbps 12.5 --error-rate 503=0.1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimServe(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.host, "host", "127.0.0.1", "address to listen on")
	fl.IntVar(&f.port, "port", 8000, "port of the first engine (0: a free port for each)")
	fl.IntVar(&f.replicas, "replicas", 1, "number of independent engines, on consecutive ports")
	fl.StringVar(&f.model, "model", "sim-llama-3-8b", "served model name")
	fl.StringVar(&f.profile, "profile", "h100-llama3-8b", "hardware profile: "+strings.Join(sim.ProfileNames(), ", "))
	fl.StringVar(&f.role, "role", "collocated", "engine role: collocated, prefill or decode")
	fl.StringVar(&f.profileFile, "profile-file", "", "a profile file (from sim profile derive or sim calibrate --observe; instead of --profile)")
	fl.StringVar(&f.modelConfig, "model-config", "", "derive a profile for any model from its Hugging Face config.json (with --gpu; instead of --profile)")
	fl.StringVar(&f.gpu, "gpu", "", "GPU for --model-config: "+strings.Join(stepmodel.GPUNames(), ", "))
	fl.IntVar(&f.eng.MaxModelLen, "max-model-len", 0, "context length (default 8192)")
	fl.IntVar(&f.eng.MaxNumSeqs, "max-num-seqs", 0, "max running sequences per step (default: the profile's, vLLM V1's for its GPU)")
	fl.IntVar(&f.eng.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "token budget per step (default: the profile's, vLLM V1's for its GPU)")
	fl.IntVar(&f.eng.BlockSize, "block-size", 0, "KV block size in tokens (default 16)")
	fl.IntVar(&f.eng.NumGPUBlocksOverride, "num-gpu-blocks-override", 0, "KV capacity in blocks (default: the profile's)")
	fl.BoolVar(&f.prefixCaching, "enable-prefix-caching", true, "automatic prefix caching (--enable-prefix-caching=false to disable)")
	fl.IntVar(&f.eng.DataParallelSize, "data-parallel-size", 0, "engine ranks behind each port (header X-data-parallel-rank picks one)")
	fl.IntVar(&f.eng.TensorParallelSize, "tensor-parallel-size", 0, "must match a calibrated profile's TP (the -tp<N> in its name); with --model-config, the TP to derive for")
	fl.StringVar(&f.eng.Dtype, "dtype", "", "dtype (fp8 perturbs outputs; others are the reference)")
	fl.StringVar(&f.eng.Quantization, "quantization", "", "weight format: fp8, int8, awq/gptq (int4), mxfp4, nvfp4, … (bytes read, GEMM rate, memory; also perturbs logprobs)")
	fl.StringVar(&f.eng.KVCacheDtype, "kv-cache-dtype", "", "KV cache dtype: auto or fp8 (one byte per element: twice the KV blocks)")
	fl.BoolVar(&f.eng.EnableExpertParallel, "enable-expert-parallel", false, "spread a mixture of experts' experts over the tensor x data parallel GPUs")
	fl.Var(boolPtrFlag{&f.eng.AsyncScheduling}, "async-scheduling", "overlap the scheduler's CPU work with the GPU step (vLLM's default from v0.14; default here: off, as calibrated)")
	fl.Lookup("async-scheduling").NoOptDefVal = "true"
	fl.Float64Var(&f.flipRate, "flip-rate", 0, "fraction of tokens a reduced precision flips (default: by scheme)")
	fl.Float64Var(&f.prof.StepBaseMs, "step-base-ms", 0, "profile override: fixed cost of a step")
	fl.Float64Var(&f.prof.CPUUsPerSeq, "cpu-us-per-seq", 0, "profile override: CPU cost per sequence in a step")
	fl.Float64Var(&f.prof.GPUTimeScale, "gpu-time-scale", 0, "profile override: multiplier on a calibrated profile's GPU time")
	fl.Float64Var(&f.prof.KVDescriptorUs, "kv-descriptor-us", 0, "profile override: cost of posting one KV transfer descriptor")
	fl.Float64Var(&f.prof.PrefillUsPerToken, "prefill-us-per-token", 0, "profile override: cost per prefill token")
	fl.Float64Var(&f.prof.DecodeUsPerSeq, "decode-us-per-seq", 0, "profile override: cost per decoding sequence")
	fl.Float64Var(&f.prof.DecodeNsPerContextToken, "decode-ns-per-context-token", 0, "profile override: cost per context token of decoding sequences")
	fl.IntVar(&f.prof.KVBytesPerToken, "kv-bytes-per-token", 0, "profile override: KV bytes per token")
	fl.Float64Var(&f.prof.LinkGBps, "link-gbps", 0, "profile override: KV transfer bandwidth in GB/s")
	fl.Float64Var(&f.prof.TransferLatencyMs, "transfer-latency-ms", 0, "profile override: fixed cost of one KV transfer")
	fl.IntVar(&f.prof.NumGPUBlocks, "num-gpu-blocks", 0, "profile override: default KV capacity in blocks")
	fl.StringSliceVar(&f.errorRates, "error-rate", nil, "fault: STATUS=FRACTION of requests answered with STATUS (repeatable)")
	fl.DurationVar(&f.addedLatency, "added-latency", 0, "fault: delay before each generation request")
	fl.BoolVar(&f.stall, "stall", false, "fault: stall responses after --stall-after-tokens tokens")
	fl.IntVar(&f.stallAfter, "stall-after-tokens", 0, "fault: tokens sent before a stall")
	fl.DurationVar(&f.stallFor, "stall-for", 0, "fault: stall length (0: until the client gives up)")
	fl.BoolVar(&f.refuse, "refuse-connections", false, "fault: reset the connection of every request except /admin/* ones")
	fl.BoolVar(&f.enableAdmin, "enable-admin", false, "serve /admin/faults (fault injection, including a crash) on the engine port; off by default: whoever reaches the port could stop the engine")
	fl.DurationVar(&f.kvHold, "kv-hold-timeout", 0, "prefill role: how long unpulled KV is held (default 480s)")
	fl.Float64Var(&f.offload.GiB, "kv-offload-gib", 0, "CPU tier for evicted prefix blocks, in GiB (vLLM's kv_offloading_size; 0: none)")
	fl.Float64Var(&f.offload.GBps, "kv-offload-gbps", 0, "CPU tier: CPU->GPU bandwidth in GB/s (default 50)")
	fl.Float64Var(&f.offload.BlockUs, "kv-offload-block-us", 0, "CPU tier: fixed cost of loading one block in µs (default 5)")
	fl.DurationVar(&f.limits.ReadHeaderTimeout, "read-header-timeout", sim.DefaultReadHeaderTimeout, "close a connection whose request headers take longer")
	fl.DurationVar(&f.limits.BodyReadTimeout, "body-read-timeout", sim.DefaultBodyReadTimeout, "answer 408 to a request whose body takes longer to arrive")
	fl.DurationVar(&f.limits.WriteIdleTimeout, "write-idle-timeout", sim.DefaultWriteIdleTimeout, "cut a client that stops reading for this long (a long stream is never cut)")
	fl.DurationVar(&f.limits.IdleTimeout, "idle-timeout", sim.DefaultIdleTimeout, "close a keep-alive connection idle this long")
	fl.Int64Var(&f.limits.MaxBodyBytes, "max-body-bytes", sim.DefaultMaxBodyBytes, "answer 413 to a larger request body")
	fl.StringVar(&f.kvEvents, "kv-events-config", "", `vLLM's KV cache events, as JSON: {"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5558","topic":""}; sockets listen on 127.0.0.1, replica i's ports are offset by i`)
	return cmd
}

// simOptions turns the flags into engine options; errors are bad input.
func simOptions(cmd *cobra.Command, f *simServeFlags) (sim.Options, error) {
	prof, err := serveProfile(cmd, f)
	if err != nil {
		return sim.Options{}, err
	}
	set := cmd.Flags().Changed
	for flag, apply := range map[string]func(){
		"cpu-us-per-seq":              func() { prof.CPUUsPerSeq = f.prof.CPUUsPerSeq },
		"gpu-time-scale":              func() { prof.GPUTimeScale = f.prof.GPUTimeScale },
		"kv-descriptor-us":            func() { prof.KVDescriptorUs = f.prof.KVDescriptorUs },
		"step-base-ms":                func() { prof.StepBaseMs = f.prof.StepBaseMs },
		"prefill-us-per-token":        func() { prof.PrefillUsPerToken = f.prof.PrefillUsPerToken },
		"decode-us-per-seq":           func() { prof.DecodeUsPerSeq = f.prof.DecodeUsPerSeq },
		"decode-ns-per-context-token": func() { prof.DecodeNsPerContextToken = f.prof.DecodeNsPerContextToken },
		"kv-bytes-per-token":          func() { prof.KVBytesPerToken = f.prof.KVBytesPerToken },
		"link-gbps":                   func() { prof.LinkGBps = f.prof.LinkGBps },
		"transfer-latency-ms":         func() { prof.TransferLatencyMs = f.prof.TransferLatencyMs },
		"num-gpu-blocks":              func() { prof.NumGPUBlocks = f.prof.NumGPUBlocks },
	} {
		if set(flag) {
			apply()
		}
	}
	role, err := sim.ParseRole(f.role)
	if err != nil {
		return sim.Options{}, usageErr("--role: %w", err)
	}
	eng := f.eng
	eng.Model = f.model
	eng.EnablePrefixCaching = &f.prefixCaching
	if err := f.offload.Validate(); err != nil {
		return sim.Options{}, usageErr("--%s", strings.ReplaceAll(strings.ReplaceAll(err.Error(), "_", "-"), ", kv-", ", --kv-"))
	}
	opts := sim.Options{Engine: eng, Profile: prof, Role: role, KVHoldTimeout: f.kvHold, KVOffload: f.offload, Limits: f.limits,
		EnableAdmin: f.enableAdmin,
		Faults: sim.Faults{AddedLatency: f.addedLatency, Stall: f.stall, StallAfterTokens: f.stallAfter,
			StallFor: f.stallFor, RefuseConnections: f.refuse}}
	if set("flip-rate") {
		opts.FlipRate = &f.flipRate
	}
	if f.kvEvents != "" {
		if opts.KVEvents, err = kvevents.ParseConfig(f.kvEvents); err != nil {
			return sim.Options{}, usageErr("--%w", err)
		}
	}
	for _, kv := range f.errorRates {
		code, rate, ok := strings.Cut(kv, "=")
		c, err1 := strconv.Atoi(code)
		r, err2 := strconv.ParseFloat(rate, 64)
		if !ok || err1 != nil || err2 != nil {
			return sim.Options{}, usageErr("--error-rate %q: want STATUS=FRACTION, e.g. 503=0.1", kv)
		}
		if opts.Faults.ErrorRates == nil {
			opts.Faults.ErrorRates = map[int]float64{}
		}
		opts.Faults.ErrorRates[c] = r
	}
	if f.replicas < 1 || f.replicas > 256 {
		return sim.Options{}, usageErr("--replicas: want 1–256, got %d", f.replicas)
	}
	if f.port < 0 || f.port+f.replicas-1 > 65535 {
		return sim.Options{}, usageErr("--port: %d with %d replicas leaves the port range", f.port, f.replicas)
	}
	return opts, nil
}

// serveProfile is the named profile, or one derived from --model-config and
// --gpu.
func serveProfile(cmd *cobra.Command, f *simServeFlags) (sim.Profile, error) {
	if f.profileFile != "" {
		if cmd.Flags().Changed("profile") || f.modelConfig != "" {
			return sim.Profile{}, usageErr("--profile-file: give it alone (not with --profile or --model-config)")
		}
		p, err := sim.ReadProfileFile(f.profileFile)
		if err != nil {
			return sim.Profile{}, usageErr("--profile-file: %w", err)
		}
		return p, nil
	}
	if f.modelConfig == "" {
		if f.gpu != "" {
			return sim.Profile{}, usageErr("--gpu: only with --model-config (a named profile already fixes the GPU)")
		}
		p, err := sim.LookupProfile(f.profile)
		if err != nil {
			return sim.Profile{}, usageErr("--profile: %w", err)
		}
		return p, nil
	}
	if cmd.Flags().Changed("profile") {
		return sim.Profile{}, usageErr("--profile and --model-config: give one (--model-config derives the profile)")
	}
	if f.gpu == "" {
		return sim.Profile{}, usageErr("--gpu: required with --model-config (%s)", strings.Join(stepmodel.GPUNames(), ", "))
	}
	data, err := os.ReadFile(f.modelConfig)
	if err != nil {
		return sim.Profile{}, usageErr("--model-config: %w", err)
	}
	eng := f.eng
	eng.Model = f.model
	p, err := sim.DeriveProfile(f.gpu, data, eng)
	if err != nil {
		return sim.Profile{}, usageErr("--model-config %s: %w", f.modelConfig, err)
	}
	return p, nil
}

// engineLine is the JSON line printed per engine on start.
type engineLine struct {
	Replica          int    `json:"replica"`
	URL              string `json:"url"`
	Model            string `json:"model"`
	Profile          string `json:"profile"`
	Role             string `json:"role"`
	DataParallelSize int    `json:"data_parallel_size"`
}

func runSimServe(cmd *cobra.Command, f *simServeFlags) error {
	opts, err := simOptions(cmd, f)
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	servers := make([]*sim.Server, f.replicas)
	listeners := make([]net.Listener, f.replicas)
	closeAll := func() {
		for _, ln := range listeners {
			if ln != nil {
				ln.Close()
			}
		}
	}
	for i := range f.replicas {
		o := opts
		o.KVEvents = opts.KVEvents.ForReplica(i)
		if servers[i], err = sim.New(o); err != nil {
			closeAll()
			return usageErr("%w", err)
		}
		port := 0
		if f.port != 0 {
			port = f.port + i
		}
		addr := net.JoinHostPort(f.host, strconv.Itoa(port))
		if listeners[i], err = net.Listen("tcp", addr); err != nil {
			closeAll()
			return withCode(ExitInfra, fmt.Errorf("listening on %s: %w", addr, err))
		}
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	for i, ln := range listeners {
		line := engineLine{Replica: i, URL: "http://" + ln.Addr().String(), Model: f.model, Profile: opts.Profile.Name,
			Role: string(opts.Role), DataParallelSize: max(1, f.eng.DataParallelSize)}
		if err := enc.Encode(line); err != nil {
			closeAll()
			return withCode(ExitInfra, fmt.Errorf("writing engine address: %w", err))
		}
	}
	g, ctx := errgroup.WithContext(cmd.Context())
	for i, srv := range servers {
		g.Go(func() error {
			err := srv.Serve(ctx, listeners[i])
			if errors.Is(err, sim.ErrCrashed) {
				opts.Logger.Warn("engine crashed by fault injection", "replica", i, "url", listeners[i].Addr().String())
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return withCode(ExitInfra, err)
	}
	return nil
}

// boolPtrFlag sets a *bool only when the flag is given, so an engine
// config's "engine default" (nil) survives an absent flag.
type boolPtrFlag struct{ p **bool }

func (b boolPtrFlag) String() string {
	if b.p == nil || *b.p == nil {
		return ""
	}
	return strconv.FormatBool(**b.p)
}

func (b boolPtrFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = &v
	return nil
}

func (boolPtrFlag) Type() string { return "bool" }
