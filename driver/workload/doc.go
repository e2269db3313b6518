// Package workload builds the abstract request items of a workload kind
// (random, shared_prefix, multi_turn, trace, and vllm bench serve's datasets
// sharegpt, sonnet, burstgpt, custom): prompt texts of exact token counts
// under the workload's tokenizer (the sim's or a Hugging Face
// tokenizer.json), output lengths, sessions and turns.
// Items are a pure function of the Workload and a seeded Source; the driver
// turns them into HTTP bodies and headers.
package workload
