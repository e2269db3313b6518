package stepmodel

// lin is a linear-layer table over TokenKnots up to the last measured token
// count; the generated file lists only the values.
func lin(last float64, y ...float64) Table { return Table{X: knotsUpTo(TokenKnots, last), Y: y} }

// ar is an all-reduce table over the first len(y) SizeKnots.
func ar(y ...float64) Table { return Table{X: SizeKnots[:len(y)], Y: y} }

// FormulaRevision names the step model's formulas and hand-fitted figures
// (groupedGEMMMemEff, moeFixedUs, the CUDA-graph decode rule, …), which
// TablesVersion does not cover: a profile's content hash includes it, so
// rows simulated before and after such a change do not claim the same
// model of the hardware. Change it with every such change.
const FormulaRevision = "2026-11-29 cuda-graph decode, moe fixed latency"
