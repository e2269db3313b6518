// Package hf reads a Hugging Face tokenizer.json and encodes and decodes
// text as the tokenizers library does, for the BPE models that serving
// benchmarks meet: byte-level BPE (GPT-2, Llama-3, Qwen) and
// SentencePiece-style BPE with byte fallback (Llama-2, Mistral).
//
// The pipeline is the library's: added tokens are split out first, each
// remaining segment is normalized (NFC/NFKC/…, Prepend, Replace, Lowercase),
// pre-tokenized (Split by regex, ByteLevel, Metaspace, Digits), and each
// piece is merged by BPE in merge-rank order (lowest rank, then leftmost,
// as the library's priority queue does). Split patterns are Oniguruma
// regexes with look-ahead, which Go's regexp cannot compile; they run on
// github.com/dlclark/regexp2.
//
// Other model types (Unigram, WordPiece) and components not listed are
// refused by Load with an error naming them, never approximated. Encode
// never adds special tokens (add_special_tokens=False), as vllm bench
// serve's prompt generation does.
package hf
