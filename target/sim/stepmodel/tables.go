package stepmodel

// lin is a linear-layer table over TokenKnots up to the last measured token
// count; the generated file lists only the values.
func lin(last float64, y ...float64) Table { return Table{X: knotsUpTo(TokenKnots, last), Y: y} }

// ar is an all-reduce table over the first len(y) SizeKnots.
func ar(y ...float64) Table { return Table{X: SizeKnots[:len(y)], Y: y} }
