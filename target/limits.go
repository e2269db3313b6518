package target

import "github.com/autoinfer/autoinfer/target/engine"

// Limits are how long a request a target's engines accept, known before
// anything runs. Zero means unknown.
type Limits struct {
	// MaxModelLen is the engine's context: prompt plus max_tokens of one
	// request.
	MaxModelLen int
	// KVTokens is one engine's KV cache capacity in tokens (blocks times
	// block size); a request longer than it can never be scheduled.
	KVTokens int
	// Source says where the figures come from ("sim default", "engine config").
	Source string
}

// ContextLimited is Options whose engines' context limits follow from the
// spec alone (the sim: its defaults and profile), so validation can refuse a
// workload whose longest request cannot fit before any worker starts.
type ContextLimited interface {
	Options
	// ContextLimits returns the limits of an engine run with e.
	ContextLimits(e engine.Config) (Limits, error)
}
