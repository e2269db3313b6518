// Package tokenizer is the deterministic tokenizer shared by the simulated
// engine and the workload driver.
//
// It splits text the way a BPE tokenizer roughly does on English: every run of
// letters or digits is one token, every other non-space character is one
// token, and white space only separates. Common English words map to fixed
// ids in a small vocabulary; any other piece hashes into the rest of the id
// space, so every text has a stable token sequence. Because Generate builds
// prompts from vocabulary words only, the driver can produce prompts whose
// token count is exact for the simulator and close for real BPE tokenizers.
package tokenizer
