package h1

import (
	"bufio"
	"errors"
	"net/http"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// A message head (start line and header fields) is read whole into one
// string, and the start line's parts and every field's name and value are
// substrings of it: one allocation for the text of a head instead of one
// per line and value (net/textproto), which was a tenth of the router's
// allocations per request.

var errHeadSyntax = errors.New("malformed message head")

// readHead reads from br through the empty line that ends a head, at most
// limit bytes, using scratch (returned, maybe grown) as room. It returns
// the head without its final empty line. A head over limit is
// errHeadTooLarge. A request's head (request set) must end every line,
// the empty ones included, in CRLF (errBareLF otherwise), and empty lines
// before it are skipped (RFC 9112 §2.2 asks a server to); in an answer's a
// bare LF ends a line too (§2.2 lets a recipient accept one, as net/http
// does), and an empty line before the status line is malformed.
func readHead(br *bufio.Reader, scratch []byte, limit int, request bool) (string, []byte, error) {
	buf := scratch[:0]
	lineStart, skipped := 0, 0
	for {
		frag, err := br.ReadSlice('\n')
		if skipped+len(buf)+len(frag) > limit {
			return "", buf, errHeadTooLarge
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			line := buf[lineStart:]
			if request && (len(line) < 2 || line[len(line)-2] != '\r') {
				return "", buf, errBareLF
			}
			if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
				if lineStart == 0 && !request {
					return "", buf, errHeadSyntax
				}
				if lineStart == 0 {
					skipped += len(buf)
					buf = buf[:0]
					continue
				}
				return string(buf[:lineStart]), buf, nil
			}
			lineStart = len(buf)
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: go on reading it.
		default:
			return "", buf, err
		}
	}
}

// errBareLF is a line of a request's head or a trailer that ends in LF
// without CR. A proxy in front of the router that ends lines only at CRLF
// would read such a head as other fields, or other requests, than the
// router does, so the router reads none: a head is all CRLF or refused.
var errBareLF = errors.New("line ends in a bare LF; request lines must end in CRLF")

// nextLine cuts the first line off s, without its CRLF (or LF).
func nextLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	return strings.TrimSuffix(line, "\r"), rest
}

// parseFields parses the header fields in s, one per line, into h.
// Values are substrings of s. Single-valued fields share one backing
// array: room when it has a slot per line (the caller's, allocated with
// what holds h), else a new one. A field name must be a token right
// before its colon; a value may not hold control bytes other than tab; an
// obsolete folded line is refused (RFC 9112 §5.2 allows either).
func parseFields(s string, h http.Header, room []string) error {
	n := strings.Count(s, "\n") + 1
	vals := room
	if len(vals) < n {
		vals = make([]string, n)
	}
	for s != "" {
		var line string
		line, s = nextLine(s)
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || !validFieldName(name) {
			return errHeadSyntax
		}
		value = strings.Trim(value, " \t")
		if !validFieldValue(value) {
			return errHeadSyntax
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if vs, dup := h[key]; dup {
			h[key] = append(vs, value)
			continue
		}
		vals[0] = value
		h[key], vals = vals[:1:1], vals[1:]
	}
	return nil
}

func validFieldName(s string) bool {
	for i := range len(s) {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return true
}

// validFieldValue accepts visible characters, obs-text, space and tab.
func validFieldValue(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// readTrailer reads a chunked body's trailer section (fields through an
// empty line, maybe none), checks and drops it. Every line must end in
// CRLF (errBareLF): a request's, as its head; an answer's, because
// net/http, which the answers must be read like (transport_diff_test.go),
// ends the section only at CRLF.
func readTrailer(br *bufio.Reader, scratch []byte, limit int) ([]byte, error) {
	buf := scratch[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > limit {
			return buf, errHeadTooLarge
		}
		start := len(buf)
		buf = append(buf, frag...)
		switch {
		case err == nil:
			line := buf[start:]
			if len(line) < 2 || line[len(line)-2] != '\r' {
				return buf, errBareLF
			}
			if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
				return buf, parseFields(string(buf[:start]), http.Header{}, nil)
			}
		case errors.Is(err, bufio.ErrBufferFull):
		default:
			return buf, err
		}
	}
}
