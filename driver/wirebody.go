package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"unsafe"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// bodySum is the digest of a request's body, the form in which the stream
// and sent hashes take a body. It is one of two, fixed per request by what
// the workload drew (sealBody), never by the path that produced it:
//
//   - a parts body, the run's template (bodyTemplate) written around an
//     item's own prompt the workload drew as parts (TokenItems.AtParts: a
//     generated prompt of random or trace with the sim tokenizer): SHA-256
//     of partsTag, the template's digest (SHA-256 of the hole order and the
//     three byte pieces, each after its length), max_tokens, the count of
//     non-empty parts and each non-empty part's own SHA-256, in order (all
//     integers 8 bytes little-endian). The body's bytes are never needed,
//     and a trace block repeated by thousands of prompts is digested once
//     (partSums);
//   - any other body: SHA-256 of its bytes.
//
// Either changes when any byte of the body changes: the parts digest
// covers every byte of the template, the length and every part, and Join
// puts one space between two non-empty parts, so equal records are equal
// bodies.
type bodySum [sha256.Size]byte

// partsTag opens a parts body's record: no JSON body starts with a zero
// byte, so a record is never also some body's bytes.
const partsTag = "\x00autoinfer parts body\x00"

// bytesSum is the digest of a body that is not a parts body.
func bytesSum(b []byte) bodySum { return sha256.Sum256(b) }

// bodySums digests the bodies a stream's producer makes: each when its
// request is produced (sealBody), so the stream hash and the sent hash
// take the same digest and no body is digested twice.
type bodySums struct {
	t      *bodyTemplate // nil: no request is a parts body
	tsum   bodySum       // the template's digest
	parts  partSums
	record []byte // a parts body's record, reused
}

func newBodySums(t *bodyTemplate) *bodySums {
	d := &bodySums{t: t}
	if t != nil {
		b := []byte{0}
		if t.promptFirst {
			b[0] = 1
		}
		for _, p := range t.parts {
			b = append(binary.LittleEndian.AppendUint64(b, uint64(len(p))), p...)
		}
		d.tsum = sha256.Sum256(b)
	}
	return d
}

// seal sets q's body digest as it is produced: parts are the workload's
// draw of its item's prompt (drawItem; nil when not drawn as parts). A
// request whose body is the template's rendering of parts (q.own: the
// item's prompt alone) gets the parts digest, any other with a body the
// digest of its bytes; one without (a later turn carrying the server's
// answers) is digested when sent.
func (d *bodySums) seal(q *Request, parts []string) {
	switch {
	case parts != nil && q.own && d.t != nil:
		q.sum = d.partsSum(parts, q.MaxTokens)
	case q.Body != nil:
		q.sum = bytesSum(q.Body)
	default:
		return
	}
	q.sealed = true
}

// partsSum is the digest of the template's body of parts with maxTokens.
func (d *bodySums) partsSum(parts []string, maxTokens int) bodySum {
	n := 0
	for _, p := range parts {
		if p != "" {
			n++
		}
	}
	r := append(append(d.record[:0], partsTag...), d.tsum[:]...)
	r = binary.LittleEndian.AppendUint64(r, uint64(maxTokens))
	r = binary.LittleEndian.AppendUint64(r, uint64(n))
	for _, p := range parts {
		if p != "" {
			s := d.parts.sum(p)
			r = append(r, s[:]...)
		}
	}
	d.record = r
	return sha256.Sum256(r)
}

// drawItem is item i with its prompt as the parts the workload draws it in
// (TokenItems.AtParts), nil when it does not (another tokenizer than the
// sim's, a trace line's own prompt, another kind); the item's Prompt is
// their join either way. Every producer of a stream draws its items here,
// so a request gets the same digest whichever path produced it.
func drawItem(items workload.Items, i int) (workload.Item, []string) {
	ti, ok := items.(workload.TokenItems)
	if !ok {
		return items.At(i), nil
	}
	it, _, parts := ti.AtParts(i, false)
	if parts != nil {
		it.Prompt = workload.Join(parts)
	}
	return it, parts
}

// Bounds of partSums: about twice the trace block cache's blocks
// (workload.maxCachedBlocks), and of the text it keeps alive.
const (
	maxMemoParts = 8192
	maxMemoBytes = 32 << 20
)

// partSums memoizes prompt parts' SHA-256: a trace block's text recurs in
// every prompt that shares it. A part is keyed by its identity, the
// address of its bytes and its length: the workload hands every prompt
// that shares a cached block the same string, and hashing a key's content
// (a map[string]) cost half what the digests it spared did. The key holds
// the address, so the bytes stay alive and, Go strings being immutable,
// keep the content they had when digested; a block made again (after the
// block cache dropped it) is a new string, digested again.
//
// It holds two generations of at most maxMemoParts/2 parts and
// maxMemoBytes/2 bytes each, as the block cache does: a part found in the
// older one moves to the newer one, and when the newer one is full the
// older one is dropped and the newer one becomes the older. A part larger
// than a generation is digested each time.
type partSums struct {
	cur, old map[partKey]bodySum
	curBytes int
}

type partKey struct {
	p *byte
	n int
}

func (m *partSums) sum(p string) bodySum {
	k := partKey{unsafe.StringData(p), len(p)}
	if s, ok := m.cur[k]; ok {
		return s
	}
	s, ok := m.old[k]
	if ok {
		delete(m.old, k)
	} else {
		// The part's bytes, read in place: the digest only reads them.
		s = sha256.Sum256(unsafe.Slice(k.p, k.n))
	}
	if len(p) <= maxMemoBytes/2 {
		m.put(k, s)
	}
	return s
}

func (m *partSums) put(k partKey, s bodySum) {
	if m.cur == nil || len(m.cur) >= maxMemoParts/2 || m.curBytes+k.n > maxMemoBytes/2 {
		m.old, m.cur, m.curBytes = m.cur, make(map[partKey]bodySum, maxMemoParts/2), 0
	}
	m.cur[k] = s
	m.curBytes += k.n
}
