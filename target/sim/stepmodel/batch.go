package stepmodel

// Batch is what one engine step computes: prefill chunks (each after the
// tokens of its sequence already in the KV cache) and one token for each
// decoding sequence.
type Batch struct {
	Chunks []Chunk
	// DecodeSeqs sequences decode one token each over DecodeContext
	// context tokens in total.
	DecodeSeqs, DecodeContext int
}

// Chunk is one sequence's prefill work in a step: Tokens new tokens after
// Prefix tokens whose KV is already computed (cached or earlier chunks).
type Chunk struct{ Tokens, Prefix int }

// PrefillTokens is the number of prefill tokens in b.
func (b *Batch) PrefillTokens() int {
	n := 0
	for _, c := range b.Chunks {
		n += c.Tokens
	}
	return n
}

// Tokens is the number of tokens the step's forward pass computes.
func (b *Batch) Tokens() int { return b.PrefillTokens() + b.DecodeSeqs }

// Seqs is the number of sequences in the step.
func (b *Batch) Seqs() int { return len(b.Chunks) + b.DecodeSeqs }
