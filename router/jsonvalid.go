package router

import (
	"bytes"
	"encoding/binary"
)

// maxJSONDepth is encoding/json's nesting limit, so validJSON accepts
// exactly what json.Valid accepts.
const maxJSONDepth = 10000

// validJSON reports whether b is one JSON value (RFC 8259, as json.Valid:
// invalid UTF-8 inside strings is accepted). It is what json.Valid
// computes, in one linear pass with no allocation below 64 levels of
// nesting, and several times faster: a prompt is mostly one long string,
// which it skips in a tight loop where encoding/json's scanner calls a
// state function per byte.
func validJSON(b []byte) bool {
	v := jsonValidator{b: b}
	v.ws()
	if !v.value() {
		return false
	}
	for v.depth > 0 {
		v.ws()
		if v.i >= len(v.b) {
			return false
		}
		top := v.top()
		switch c := v.b[v.i]; {
		case c == ',':
			v.i++
			v.ws()
			if top == '{' && !v.key() {
				return false
			}
			if !v.value() {
				return false
			}
		case c == '}' && top == '{', c == ']' && top == '[':
			v.i++
			v.pop()
		default:
			return false
		}
	}
	v.ws()
	return v.i == len(v.b)
}

// jsonValidator is validJSON's cursor and the stack of open containers
// ('{' or '['): the first 64 levels in an array inside the validator (no
// allocation), deeper ones in a slice.
type jsonValidator struct {
	b     []byte
	i     int
	depth int
	small [64]byte
	deep  []byte
}

func (v *jsonValidator) push(c byte) {
	if v.depth < len(v.small) {
		v.small[v.depth] = c
	} else {
		v.deep = append(v.deep, c)
	}
	v.depth++
}

func (v *jsonValidator) top() byte {
	if v.depth <= len(v.small) {
		return v.small[v.depth-1]
	}
	return v.deep[v.depth-1-len(v.small)]
}

func (v *jsonValidator) pop() {
	v.depth--
	if v.depth >= len(v.small) {
		v.deep = v.deep[:v.depth-len(v.small)]
	}
}

func (v *jsonValidator) ws() {
	for v.i < len(v.b) {
		switch v.b[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

// value consumes one value, or opens a container and consumes up to its
// first member's value (looping instead of recursing, so depth costs
// stack entries, not Go frames).
func (v *jsonValidator) value() bool {
	for {
		if v.i >= len(v.b) {
			return false
		}
		switch c := v.b[v.i]; c {
		case '{', '[':
			// An empty container counts towards the depth too, as in
			// encoding/json.
			if v.depth >= maxJSONDepth {
				return false
			}
		}
		switch v.b[v.i] {
		case '{':
			v.i++
			v.ws()
			if v.i < len(v.b) && v.b[v.i] == '}' {
				v.i++
				return true
			}
			if !v.key() {
				return false
			}
			v.push('{')
		case '[':
			v.i++
			v.ws()
			if v.i < len(v.b) && v.b[v.i] == ']' {
				v.i++
				return true
			}
			v.push('[')
		case '"':
			return v.str()
		case 't':
			return v.lit("true")
		case 'f':
			return v.lit("false")
		case 'n':
			return v.lit("null")
		default:
			return v.num()
		}
	}
}

// key consumes a member name and its colon.
func (v *jsonValidator) key() bool {
	if v.i >= len(v.b) || v.b[v.i] != '"' || !v.str() {
		return false
	}
	v.ws()
	if v.i >= len(v.b) || v.b[v.i] != ':' {
		return false
	}
	v.i++
	v.ws()
	return true
}

func (v *jsonValidator) str() bool {
	v.i++ // the opening quote
	for v.i < len(v.b) {
		// Plain bytes are nearly all of a prompt: skip them eight at a
		// time, then one by one up to the next special byte.
		for v.i+8 <= len(v.b) && !special8(binary.LittleEndian.Uint64(v.b[v.i:])) {
			v.i += 8
		}
		for v.i < len(v.b) && v.b[v.i] >= 0x20 && v.b[v.i] != '"' && v.b[v.i] != '\\' {
			v.i++
		}
		if v.i >= len(v.b) {
			return false
		}
		c := v.b[v.i]
		switch {
		case c == '"':
			v.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			v.i++
			if v.i >= len(v.b) {
				return false
			}
			switch v.b[v.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				if v.i+4 >= len(v.b) {
					return false
				}
				for _, h := range v.b[v.i+1 : v.i+5] {
					if !isHex(h) {
						return false
					}
				}
				v.i += 5
			default:
				return false
			}
		default:
			v.i++
		}
	}
	return false
}

// special8 reports whether any of the eight bytes in x is a control
// character, a quote or a backslash (the classic SWAR tests: a byte below n
// sets its high bit in x−n·0x01… where x's own high bit is clear).
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := func(x uint64, n uint64) uint64 { return (x - ones*n) &^ x & highs }
	return below(x, 0x20)|below(x^(ones*'"'), 1)|below(x^(ones*'\\'), 1) != 0
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func (v *jsonValidator) lit(s string) bool {
	if !bytes.HasPrefix(v.b[v.i:], []byte(s)) {
		return false
	}
	v.i += len(s)
	return true
}

// num consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (v *jsonValidator) num() bool {
	if v.i < len(v.b) && v.b[v.i] == '-' {
		v.i++
	}
	switch {
	case v.i < len(v.b) && v.b[v.i] == '0':
		v.i++
	case v.digits() == 0:
		return false
	}
	if v.i < len(v.b) && v.b[v.i] == '.' {
		v.i++
		if v.digits() == 0 {
			return false
		}
	}
	if v.i < len(v.b) && (v.b[v.i] == 'e' || v.b[v.i] == 'E') {
		v.i++
		if v.i < len(v.b) && (v.b[v.i] == '+' || v.b[v.i] == '-') {
			v.i++
		}
		if v.digits() == 0 {
			return false
		}
	}
	return true
}

func (v *jsonValidator) digits() int {
	start := v.i
	for v.i < len(v.b) && '0' <= v.b[v.i] && v.b[v.i] <= '9' {
		v.i++
	}
	return v.i - start
}
