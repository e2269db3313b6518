package driver

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/autoinfer/autoinfer/driver/workload"
	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// bodySum is the digest of a request's body, the form in which the stream
// and sent hashes take a body. It is one of two, fixed per request by what
// the workload drew (sealBody), never by the path that produced it:
//
//   - a parts body, the run's template (bodyTemplate) written around an
//     item's own prompt the workload generated (TokenItems.AtParts: a
//     generated prompt of random or trace with the sim tokenizer): SHA-256
//     of partsTag, the template's digest (SHA-256 of the hole order and the
//     three byte pieces, each after its length), the generator's revision
//     (workload.SimPrompts, after its length), max_tokens, the count of
//     the prompt's spans and each span's record, in order: a shared span
//     (a trace's full hash_id block, random's shared prefix: Key not 0) is
//     the byte 1, its Key and its length, a descriptor of its content
//     (the Key is its source's first draw, the tokens are drawn after it:
//     workload.generator.shared), so its tokens are never needed and a
//     block thousands of prompts repeat costs 17 bytes a prompt; any
//     other span is the byte 0 and SHA-256 of its ids (2 bytes each,
//     little-endian), the sim tokenizer's words being a function of them.
//     All integers are 8 bytes little-endian. A blind prompt (ids never
//     drawn) and a drawn one have the same record: one request has one
//     digest whatever the path, clock or kept body;
//   - any other body (a trace line's own prompt, a dataset's text, a
//     system prompt or history): SHA-256 of its bytes.
//
// Either changes when any byte of the body would change: the parts digest
// covers every byte of the template, the length, the generator and each
// span's content (its ids, or the seed, length and revision that fix a
// shared span's), and Join puts one space between two non-empty parts.
type bodySum [sha256.Size]byte

// partsTag opens a parts body's record: no JSON body starts with a zero
// byte, so a record is never also some body's bytes. v2: spans, not the
// parts' text.
const partsTag = "\x00autoinfer parts body v2\x00"

// bytesSum is the digest of a body that is not a parts body.
func bytesSum(b []byte) bodySum { return sha256.Sum256(b) }

// bodySums digests the bodies a stream's producer makes: each when its
// request is produced (sealBody), so the stream hash and the sent hash
// take the same digest and no body is digested twice.
type bodySums struct {
	t      *bodyTemplate // nil: no request is a parts body
	tsum   bodySum       // the template's digest
	record []byte        // a parts body's record, reused
	ids    []byte        // a span's ids as the record digests them, reused
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

// seal sets q's body digest as it is produced: spans are the workload's
// draw of its item's generated prompt (drawItem; nil when not generated).
// A request whose body is the template's rendering of that prompt (q.own:
// the item's prompt alone) gets the parts digest, any other with a body
// the digest of its bytes; one without (a later turn carrying the
// server's answers) is digested when sent.
func (d *bodySums) seal(q *Request, spans []tokenizer.Span) {
	switch {
	case spans != nil && q.own && d.t != nil:
		q.sum = d.partsSum(spans, q.MaxTokens)
	case q.Body != nil:
		q.sum = bytesSum(q.Body)
	default:
		return
	}
	q.sealed = true
}

// partsSum is the digest of the template's body of the prompt of spans
// with maxTokens.
func (d *bodySums) partsSum(spans []tokenizer.Span, maxTokens int) bodySum {
	le := binary.LittleEndian
	r := append(append(d.record[:0], partsTag...), d.tsum[:]...)
	r = append(le.AppendUint64(r, uint64(len(workload.SimPrompts))), workload.SimPrompts...)
	r = le.AppendUint64(r, uint64(maxTokens))
	r = le.AppendUint64(r, uint64(len(spans)))
	for _, s := range spans {
		if s.Key != 0 {
			r = le.AppendUint64(le.AppendUint64(append(r, 1), s.Key), uint64(s.Len()))
			continue
		}
		// The ids' bytes in place would do, but their order is the
		// platform's: written out, the digest is the same everywhere.
		d.ids = d.ids[:0]
		for _, id := range s.IDs {
			d.ids = le.AppendUint16(d.ids, id)
		}
		sum := sha256.Sum256(d.ids)
		r = append(append(r, 0), sum[:]...)
	}
	d.record = r
	return sha256.Sum256(r)
}

// drawItem is item i with its prompt drawn as the workload generates it
// (TokenItems.AtParts), and then its spans; nil spans when it is not
// generated (another tokenizer than the sim's, a trace line's own prompt,
// another kind). The item's Prompt is the prompt either way. Every
// producer of a stream draws its items here or as AtParts does, so a
// request gets the same digest whichever path produced it.
func drawItem(items workload.Items, i int) (workload.Item, []tokenizer.Span) {
	ti, ok := items.(workload.TokenItems)
	if !ok {
		return items.At(i), nil
	}
	it, spans, parts := ti.AtParts(i, false)
	if parts == nil {
		return it, nil
	}
	it.Prompt = workload.Join(parts)
	return it, spans
}
