// Package gate is the trial quality gate: the same prompts at temperature 0
// go to the deployment under test and to a reference replica, and the
// per-prompt KL divergence between their top-k logprob distributions says
// whether the deployment still computes what the reference does (a lower
// precision, a broken KV transfer or a wrong model shows up as a large KL).
package gate
