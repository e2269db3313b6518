package pd

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
)

// KV connectors: how the two legs are tied together on the wire.
const (
	ConnectorNIXL = "nixl" // kv_transfer_params returned by prefill, passed to decode
	ConnectorNCCL = "nccl" // both peers' addresses encoded in the shared request id
)

// RequestID is the X-Request-Id both legs of one prefill attempt carry.
// nixl: the client's (or generated) id. nccl: P2P-NCCL's form naming both
// peers, ___prefill_addr_{host:port}___decode_addr_{host:port}_{nonce},
// with host:port taken from the workers' URLs.
func RequestID(connector, clientID, nonce, prefillURL, decodeURL string) string {
	if connector != ConnectorNCCL {
		return clientID
	}
	return "___prefill_addr_" + hostPort(prefillURL) + "___decode_addr_" + hostPort(decodeURL) + "_" + nonce
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// NewNonce is a random UUID's 32 hex digits, for nccl request ids.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
