package sim

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	engcfg "github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/target/kvevents"
	"github.com/autoinfer/autoinfer/target/sim/stepmodel"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Role is what part of a prefill/decode split an engine plays.
type Role string

// Roles. A collocated engine prefills and decodes; a prefill engine honours
// kv_transfer_params.do_remote_decode and holds the KV for a decode engine; a
// decode engine honours do_remote_prefill and pulls that KV.
const (
	RoleCollocated Role = "collocated"
	RolePrefill    Role = "prefill"
	RoleDecode     Role = "decode"
)

// ParseRole accepts "" (collocated) and the three role names.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case "", RoleCollocated:
		return RoleCollocated, nil
	case RolePrefill, RoleDecode:
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want collocated, prefill or decode)", s)
}

// Options configure one simulated server (one port, DataParallelSize ranks).
type Options struct {
	Engine  engcfg.Config
	Profile Profile
	Role    Role
	Faults  Faults
	Logger  *slog.Logger
	// EnableAdmin serves the /admin/* routes (fault injection, including a
	// crash). Off by default: anyone who reaches the port could stop the
	// engine. Trials turn it on for the engines they start.
	EnableAdmin bool
	// FlipRate overrides the fraction of output tokens that a reduced
	// precision (Engine.Quantization / Dtype) flips to the runner-up token.
	// Nil means the table in precision.go.
	FlipRate *float64
	// KVHoldTimeout is how long a prefill engine keeps KV blocks that no
	// decode engine pulled (vLLM's default: 480 s).
	KVHoldTimeout time.Duration
	// KVHost is the address the KV side channel listens on and advertises
	// as remote_host (default 127.0.0.1).
	KVHost string
	// Clock is the engine's time source (nil: the time package).
	Clock Clock
	// Limits bound request bodies and slow or idle clients (zero fields:
	// the defaults).
	Limits Limits
	// KVNetwork carries the KV side channel (nil: TCP).
	KVNetwork Network
	// KVOffload is an optional CPU tier for evicted prefix blocks.
	KVOffload KVOffload
	// KVEvents is vLLM's --kv-events-config: with enable_kv_cache_events
	// the server publishes its prefix cache's events (kvevents.go). The
	// sockets listen on 127.0.0.1 whatever host the endpoints name.
	KVEvents kvevents.Config
	// KVEventsLose, when set, is asked for every event batch; true sends it
	// nowhere (a lost message: the replay buffer keeps it). Tests use it.
	KVEventsLose func(seq uint64) bool
}

// Defaults for engine fields left at zero, as vLLM's (block size 16,
// max_num_seqs 256, max_num_batched_tokens 8192) with an 8k context.
const (
	defaultBlockSize     = 16
	defaultMaxNumSeqs    = 256
	defaultMaxBatched    = 8192
	defaultMaxModelLen   = 8192
	defaultNumGPUBlocks  = 4096
	defaultKVHoldTimeout = 480 * time.Second
)

// config is Options resolved: every default applied, every value checked.
type config struct {
	model        string
	maxModelLen  int
	maxNumSeqs   int
	maxBatched   int
	blockSize    int
	numBlocks    int
	prefixCache  bool
	ranks        int
	tpSize       int
	profile      Profile
	role         Role
	precision    precision
	holdTimeout  time.Duration
	kvHost       string
	logger       *slog.Logger
	clock        Clock
	kvNet        Network
	initialFault Faults
	offload      KVOffload
	limits       Limits
	kvEvents     kvevents.Config
	kvEventsLose func(seq uint64) bool
}

func resolve(o Options) (config, error) {
	e := o.Engine
	c := config{
		model:       strings.TrimSpace(e.Model),
		maxModelLen: orDefault(e.MaxModelLen, defaultMaxModelLen),
		maxNumSeqs:  orDefault(e.MaxNumSeqs, orDefault(o.Profile.MaxNumSeqs, defaultMaxNumSeqs)),
		maxBatched:  orDefault(e.MaxNumBatchedTokens, orDefault(o.Profile.MaxNumBatchedTokens, defaultMaxBatched)),
		blockSize:   orDefault(e.BlockSize, defaultBlockSize),
		prefixCache: e.PrefixCaching(),
		ranks:       orDefault(e.DataParallelSize, 1),
		tpSize:      orDefault(e.TensorParallelSize, 1),
		profile:     o.Profile,
		holdTimeout: o.KVHoldTimeout,
		kvHost:      o.KVHost,
		logger:      o.Logger,
		clock:       o.Clock,
		kvNet:       o.KVNetwork,
	}
	if c.model == "" {
		return config{}, field.Errorf("engine.model", "must name the served model")
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"engine.max_model_len", e.MaxModelLen}, {"engine.max_num_seqs", e.MaxNumSeqs},
		{"engine.max_num_batched_tokens", e.MaxNumBatchedTokens}, {"engine.block_size", e.BlockSize},
		{"engine.num_gpu_blocks_override", e.NumGPUBlocksOverride}, {"engine.data_parallel_size", e.DataParallelSize},
		{"engine.tensor_parallel_size", e.TensorParallelSize},
	} {
		if f.v < 0 {
			return config{}, field.Errorf(f.name, "must be >= 0, got %d", f.v)
		}
	}
	if c.ranks > 64 {
		return config{}, field.Errorf("engine.data_parallel_size", "at most 64 ranks per server, got %d", c.ranks)
	}
	if c.profile.Name == "" {
		return config{}, field.Errorf("profile", "not set (use LookupProfile)")
	}
	if err := c.profile.Validate(); err != nil {
		return config{}, field.Errorf("profile", "%v", err)
	}
	if err := c.applyModel(e); err != nil {
		return config{}, err
	}
	c.numBlocks = orDefault(e.NumGPUBlocksOverride, orDefault(c.profile.NumGPUBlocks, defaultNumGPUBlocks))
	if capacity := c.numBlocks * c.blockSize; c.maxModelLen > capacity {
		return config{}, field.Errorf("engine.max_model_len", "%d exceeds the KV cache capacity of %d tokens (%d blocks of %d); lower it or raise num_gpu_blocks_override",
			c.maxModelLen, capacity, c.numBlocks, c.blockSize)
	}
	role, err := ParseRole(string(o.Role))
	if err != nil {
		return config{}, field.Errorf("role", "%v", err)
	}
	c.role = role
	if c.precision, err = precisionOf(e.Dtype, e.Quantization, o.FlipRate); err != nil {
		return config{}, err
	}
	if err := o.Faults.Validate(); err != nil {
		return config{}, field.Errorf("faults", "%v", err)
	}
	c.initialFault = o.Faults
	if _, err := newCPUTier(o.KVOffload, c.profile.KVBytesPerToken*c.blockSize); err != nil {
		return config{}, err
	}
	if o.KVOffload.GiB > 0 && !c.prefixCache {
		return config{}, field.Errorf("kv_offload_gib", "a CPU tier needs prefix caching (engine.enable_prefix_caching)")
	}
	c.offload = o.KVOffload
	if err := o.KVEvents.Validate(); err != nil {
		return config{}, err
	}
	if o.KVEvents.Enabled() && !c.prefixCache {
		return config{}, fmt.Errorf("kv-events-config: KV events need prefix caching (engine.enable_prefix_caching)")
	}
	c.kvEvents, c.kvEventsLose = o.KVEvents, o.KVEventsLose
	if c.limits, err = o.Limits.withDefaults(); err != nil {
		return config{}, err
	}
	if c.holdTimeout < 0 {
		return config{}, field.Errorf("kv_hold_timeout", "must be >= 0, got %v", c.holdTimeout)
	}
	if c.holdTimeout == 0 {
		c.holdTimeout = defaultKVHoldTimeout
	}
	if c.kvHost == "" {
		c.kvHost = "127.0.0.1"
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.clock == nil {
		c.clock = RealClock{}
	}
	if c.kvNet == nil {
		c.kvNet = &tcpNetwork{}
	}
	return c, nil
}

// applyModel reconciles a calibrated profile's step model with the engine
// config: the tensor parallelism is the profile's; the weights' and KV
// cache's precision, expert parallelism and async scheduling are the
// engine's. When they change what fits in memory (or
// gpu_memory_utilization or block_size differ from the profile's 0.9 and
// 16), the KV capacity is sized again as vLLM would, unless the profile's
// num_gpu_blocks was overridden.
func (c *config) applyModel(e engcfg.Config) error {
	m := c.profile.Model
	if m == nil {
		return nil
	}
	if e.TensorParallelSize != 0 && e.TensorParallelSize != m.TP {
		return field.Errorf("engine.tensor_parallel_size", "%d, but profile %s is calibrated for %d (use the -tp%d profile)",
			e.TensorParallelSize, c.profile.Name, m.TP, e.TensorParallelSize)
	}
	c.tpSize = m.TP
	c.profile.overlapCPU = e.AsyncScheduling != nil && *e.AsyncScheduling
	mm, err := m.Configure(setupOf(e))
	if err != nil {
		return err
	}
	c.profile.Model = mm
	c.profile.KVBytesPerToken = int(mm.KVBytesPerToken())
	util := e.GPUMemoryUtilization
	if util == 0 {
		util = gpuMemoryUtilRatio
	}
	profileBlocks := m.KVBlocks(gpuMemoryUtilRatio, defaultBlockSize, c.profile.MaxNumBatchedTokens, c.profile.MaxNumSeqs)
	if c.profile.NumGPUBlocks != profileBlocks || (mm.SameMemory(m) && util == gpuMemoryUtilRatio && c.blockSize == defaultBlockSize) {
		return nil
	}
	if err := mm.FitError(util, c.maxBatched, c.maxNumSeqs); err != nil {
		return err
	}
	c.profile.NumGPUBlocks = mm.KVBlocks(util, c.blockSize, c.maxBatched, c.maxNumSeqs)
	return nil
}

// setupOf is what e changes in a step model.
func setupOf(e engcfg.Config) stepmodel.Setup {
	return stepmodel.Setup{Quantization: e.Quantization, Dtype: e.Dtype, KVCacheDtype: e.KVCacheDtype,
		ExpertParallel: e.EnableExpertParallel, DataParallel: e.DataParallelSize, MaxModelLen: e.MaxModelLen}
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
