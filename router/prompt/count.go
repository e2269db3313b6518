package prompt

// Counts is what routing_threshold estimates a prompt's tokens from.
type Counts struct {
	Chars int // characters of text: strings, and the text of text parts
	IDs   int // token ids: numbers
}

// Count measures a prompt-like JSON value: the characters of its strings,
// of arrays element by element and of chat content parts whose type is
// absent or "text" (their "text" member), and one id per number.
func Count(raw []byte) (Counts, error) {
	s := &scanner{b: raw}
	var c Counts
	if s.peek() == 0 {
		return c, nil
	}
	if err := s.count(&c, 1); err != nil {
		return c, err
	}
	if s.peek() != 0 {
		return c, errMalformed
	}
	return c, nil
}

func (s *scanner) count(c *Counts, depth int) error {
	switch s.peek() {
	case '"':
		span, esc, err := s.str()
		if err != nil {
			return err
		}
		n, err := runesOf(span, esc)
		c.Chars += n
		return err
	case '[':
		if depth > MaxDepth {
			return ErrTooDeep
		}
		var err error
		for more := s.open(); more && err == nil; more, err = s.next() {
			if err = s.count(c, depth+1); err != nil {
				return err
			}
		}
		return err
	case '{':
		if depth > MaxDepth {
			return ErrTooDeep
		}
		return s.countPart(c, depth)
	}
	v, err := s.scalar()
	if err == nil && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		c.IDs++
	}
	return err
}

// countPart counts a content part's last "text" member when its "type" is
// absent, null or "text". A "type" that is not a string (or null)
// disqualifies the part, as it fails to decode as one.
func (s *scanner) countPart(c *Counts, depth int) error {
	mark, typ, typed := *c, "", true
	err := s.members(func(key string) error {
		switch {
		case field(key, "text"):
			*c = mark
			return s.count(c, depth+1)
		case field(key, "type"):
			switch s.peek() {
			case '"':
				span, esc, err := s.str()
				if err != nil {
					return err
				}
				typ, err = decodeString(span, esc)
				return err
			case 'n': // null leaves the type as it was
			default:
				typed = false
			}
		}
		return s.skip()
	})
	if textPart := typed && (typ == "" || typ == "text"); err == nil && !textPart {
		*c = mark
	}
	return err
}
