package virtual

import (
	"github.com/autoinfer/autoinfer/router"
	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/target/kvevents"
)

// FeedIndex makes the engines report their KV events and applies each
// batch to idx at once, as the router's index of their caches is fed: what
// receipts' held tokens were read from before the engines counted them
// (sim.HeldPrompt), for a test to compare the two. The engines then refuse
// blind prompts, so the deployment reads prompts.
func (d *Deployment) FeedIndex(idx *policy.BlockIndex) {
	d.kv.observed = true
	d.fleet.ObserveKVEvents(func(w, _ int, b kvevents.Batch) { router.ApplyKVBatch(idx, d.kv.urls[w], d.dp, b) })
}
