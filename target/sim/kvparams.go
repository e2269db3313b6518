package sim

// KVTransferParams is vLLM's kv_transfer_params object (NixlConnector
// form). A router sends {do_remote_decode: true, …nulls} to a prefill
// engine, which answers with the fields a decode engine needs to pull the
// KV; the router passes those verbatim to the decode engine.
type KVTransferParams struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  *string `json:"remote_engine_id"`
	RemoteBlockIDs  []int   `json:"remote_block_ids"`
	RemoteRequestID *string `json:"remote_request_id,omitempty"`
	RemoteHost      *string `json:"remote_host"`
	RemotePort      *int    `json:"remote_port"`
	TPSize          int     `json:"tp_size,omitempty"`
}
