// Package sim is a simulated vLLM engine: an HTTP server with vLLM's OpenAI
// wire surface whose timing comes from a step-based model of continuous
// batching instead of a GPU.
//
// Each engine rank runs one goroutine that repeats vLLM's scheduler step: it
// decodes one token for every running sequence, prefills chunks of waiting
// prompts under max_num_batched_tokens and max_num_seqs, charges the step a
// duration from a hardware Profile, and emits the step's tokens when the step
// ends. KV memory is paged in blocks with vLLM-style prefix caching, so
// admission, preemption and cache hits behave like the real engine. Output
// tokens are a pure function of (model, prompt tokens, position) at
// temperature 0, so replicas, roles and prefill/decode splits agree.
//
// See docs/sim.md for the endpoints, the engine model and the profiles.
package sim
