package cmd

import "github.com/autoinfer/autoinfer/router"

// vllmRouterPDDefaults fills, in PD mode, what vllm-router's command line
// does not require: the connector (vllm-router's vLLM PD mode speaks NIXL's
// kv_transfer_params) and the prefill and decode policies (vllm-router's
// fall back to --policy). A trial spec states them itself: the router
// config validates without these defaults and still requires them. It
// returns the defaulted keys and values, for one log line.
func vllmRouterPDDefaults(cfg *router.Config) []any {
	if !cfg.PDDisaggregation {
		return nil
	}
	var chosen []any
	if cfg.KVConnector == "" {
		cfg.KVConnector = "nixl"
		chosen = append(chosen, "kv_connector", cfg.KVConnector)
	}
	if cfg.PrefillPolicy == "" {
		cfg.PrefillPolicy = cfg.Policy
		chosen = append(chosen, "prefill_policy", cfg.PrefillPolicy)
	}
	if cfg.DecodePolicy == "" {
		cfg.DecodePolicy = cfg.Policy
		chosen = append(chosen, "decode_policy", cfg.DecodePolicy)
	}
	return chosen
}
