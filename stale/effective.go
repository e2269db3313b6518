package stale

import (
	"slices"
	"strings"
)

// pdOnly are router settings that exist only for prefill/decode
// disaggregation; collocatedOnly only without it (PD routes each leg by
// prefill_policy and decode_policy, never by policy).
var (
	pdOnly = []string{"pd_disaggregation", "prefill_policy", "decode_policy", "kv_connector",
		"routing_threshold", "prefill_timeout_secs", "pd_fallback_local"}
	collocatedOnly = []string{"policy"}
)

// Effective reports whether the router setting at path ("router.policy",
// "router.retry.max_retries") was in effect for a row that ran
// disaggregated (pd) or collocated. A change to a setting that was not in
// effect for both rows changed nothing either measured.
func Effective(path string, pd bool) bool {
	key, _, _ := strings.Cut(strings.TrimPrefix(path, "router."), ".")
	if pd {
		return !slices.Contains(collocatedOnly, key)
	}
	return !slices.Contains(pdOnly, key)
}
