package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxDepth is how many levels of arrays and objects the walk descends into
// a prompt-like value. Real prompts nest two or three levels (a list of
// token-id lists, chat content parts); anything deeper is refused.
const MaxDepth = 32

// ErrTooDeep is returned for a value nested deeper than MaxDepth.
var ErrTooDeep = fmt.Errorf("nested deeper than %d levels", MaxDepth)

// errMalformed is returned for input that is not JSON.
var errMalformed = errors.New("malformed JSON")

// scanner reads one JSON text left to right; i only ever grows, which is
// what keeps every walk linear.
type scanner struct {
	b []byte
	i int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str advances past the string at s.i and returns its span (quotes
// included) and whether it holds escapes.
func (s *scanner) str() (span []byte, escaped bool, err error) {
	start := s.i
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
		case '"':
			s.i++
			return s.b[start:s.i], escaped, nil
		default:
			s.i++
		}
	}
	return nil, false, errMalformed
}

// appendString appends a string span's value to dst as decodeString
// would give it; a plain span (no escapes, valid UTF-8, the usual prompt)
// is appended as is, without an intermediate copy of the whole prompt.
func appendString(dst, span []byte, escaped bool) ([]byte, error) {
	if inner := span[1 : len(span)-1]; !escaped && utf8.Valid(inner) {
		return append(dst, inner...), nil
	}
	v, err := decodeString(span, escaped)
	return append(dst, v...), err
}

// runesOf counts a string span's characters as decodeString's value has
// them, without copying a plain span.
func runesOf(span []byte, escaped bool) (int, error) {
	if inner := span[1 : len(span)-1]; !escaped && utf8.Valid(inner) {
		return utf8.RuneCount(inner), nil
	}
	v, err := decodeString(span, escaped)
	return utf8.RuneCountInString(v), err
}

// decodeString returns a string span's value as encoding/json would
// (escapes resolved, invalid UTF-8 replaced).
func decodeString(span []byte, escaped bool) (string, error) {
	inner := span[1 : len(span)-1]
	if !escaped && utf8.Valid(inner) {
		return string(inner), nil
	}
	var v string
	if err := json.Unmarshal(span, &v); err != nil {
		return "", errMalformed
	}
	return v, nil
}

// scalar advances past a number, true, false or null.
func (s *scanner) scalar() ([]byte, error) {
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",:[]{}\" \t\r\n", rune(s.b[s.i])) {
		s.i++
	}
	if s.i == start {
		return nil, errMalformed
	}
	return s.b[start:s.i], nil
}

// skip advances past one value of any depth without recursion.
func (s *scanner) skip() error {
	depth := 0
	for {
		switch s.peek() {
		case 0:
			return errMalformed
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
		case '[', '{':
			depth++
			s.i++
			continue
		case ']', '}':
			if depth == 0 {
				return errMalformed
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return errMalformed
			}
			s.i++
			continue
		default:
			if _, err := s.scalar(); err != nil {
				return err
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// open enters the array at s.i and reports whether it has an element;
// next then moves past each element's separator:
//
//	for more := s.open(); more && err == nil; more, err = s.next() { …read an element… }
func (s *scanner) open() bool {
	s.i++ // [
	if s.peek() == ']' {
		s.i++
		return false
	}
	return true
}

func (s *scanner) next() (bool, error) {
	switch s.peek() {
	case ',':
		s.i++
		return true, nil
	case ']':
		s.i++
		return false, nil
	}
	return false, errMalformed
}

// members calls each with every key of the object at s.i, positioned at
// the member's value; each must advance past the value.
func (s *scanner) members(each func(key string) error) error {
	s.i++ // {
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return errMalformed
		}
		span, esc, err := s.str()
		if err != nil {
			return err
		}
		key, err := decodeString(span, esc)
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return errMalformed
		}
		s.i++
		if err := each(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errMalformed
		}
	}
}

// field reports whether an object key selects the struct field name the
// way encoding/json matches it (case-insensitively; the names used here
// hold no letter with a non-ASCII fold).
func field(key, name string) bool { return strings.EqualFold(key, name) }
