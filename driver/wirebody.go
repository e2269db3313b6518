package driver

import "hash"

// wireBody is a request's body as the wire carries it: its bytes or, for
// a token-path request of the virtual clock, its prompt's parts, from which
// the bytes are rendered only while they are hashed. The stream and sent
// hashes digest a virtual request's body as its real-time twin sends it;
// rendering it into one reused buffer spares every request a body and a
// joined prompt that nothing else reads.
type wireBody struct {
	bytes     []byte
	parts     []string // workload.Join's parts of the prompt (bytes nil)
	maxTokens int
}

// bodyHasher writes wire bodies into digests as writeBytes writes a body.
type bodyHasher struct {
	t       *bodyTemplate // renders a parts body (set where parts occur)
	scratch []byte        // the last parts body, reused
}

func (b *bodyHasher) write(h hash.Hash, w wireBody) { writeBytes(h, b.bytes(w)) }

// bytes is w's body, valid until the next call.
func (b *bodyHasher) bytes(w wireBody) []byte {
	if w.parts == nil {
		return w.bytes
	}
	b.scratch = b.t.appendBody(b.scratch[:0], w.parts, w.maxTokens)
	return b.scratch
}
