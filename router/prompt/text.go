package prompt

// AppendText appends the text of a prompt-like JSON value to dst, as
// cache_aware matches on it: a string as its value, an array element by
// element, an object with a "text" member (a chat content part) as that
// member's text, and anything else — token ids, other objects — as its JSON
// followed by a space. null and an empty value add nothing.
func AppendText(dst, raw []byte) ([]byte, error) {
	s := &scanner{b: raw}
	if s.peek() == 0 {
		return dst, nil
	}
	dst, err := s.text(dst, 1)
	if err != nil {
		return dst, err
	}
	if s.peek() != 0 {
		return dst, errMalformed
	}
	return dst, nil
}

// text renders the value at s.i; depth counts the levels entered so far.
func (s *scanner) text(dst []byte, depth int) ([]byte, error) {
	c := s.peek()
	start := s.i
	switch c {
	case '"':
		span, esc, err := s.str()
		if err != nil {
			return dst, err
		}
		return appendString(dst, span, esc)
	case '[':
		if depth > MaxDepth {
			return dst, ErrTooDeep
		}
		// Elements inline rather than through a callback: a prompt of
		// nested arrays is mostly this loop.
		var err error
		for more := s.open(); more && err == nil; more, err = s.next() {
			if dst, err = s.text(dst, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, err
	case '{':
		if depth > MaxDepth {
			return dst, ErrTooDeep
		}
		return s.part(dst, depth)
	}
	v, err := s.scalar()
	if err != nil {
		return dst, err
	}
	if string(v) == "null" {
		return dst, nil
	}
	dst = append(dst, s.b[start:s.i]...)
	return append(dst, ' '), nil
}

// part renders an object: its last "text" member's text (rendered where it
// stands, and rolled back if a later "text" member replaces it), or, when
// it has none, its JSON and a space.
func (s *scanner) part(dst []byte, depth int) ([]byte, error) {
	start, mark, found := s.i, len(dst), false // s.i is at the '{'
	err := s.members(func(key string) error {
		if !field(key, "text") {
			return s.skip()
		}
		var err error
		dst, err = s.text(dst[:mark], depth+1)
		found = true
		return err
	})
	if err != nil || found {
		return dst, err
	}
	dst = append(dst, s.b[start:s.i]...)
	return append(dst, ' '), nil
}
