package failure

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode returns f's kind and its fields as JSON. A nil f encodes as ("", nil).
func Encode(f Failure) (Kind, []byte, error) {
	if f == nil {
		return "", nil, nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", nil, fmt.Errorf("encoding %s failure: %w", f.Kind(), err)
	}
	return f.Kind(), b, nil
}

// Decode rebuilds the typed failure from its kind and JSON fields. An empty
// kind is no failure (nil, nil); a kind this binary does not know is an error
// naming it. Fields it does not know (written by a newer binary) are ignored,
// so older binaries can still read newer ledgers.
func Decode(kind Kind, data []byte) (Failure, error) {
	switch kind {
	case "":
		return nil, nil
	case KindRouterStartupFailed:
		return decodeAs[RouterStartupFailed](data)
	case KindRouterPoolExhausted:
		return decodeAs[RouterPoolExhausted](data)
	case KindPDConnectorTimeout:
		return decodeAs[PDConnectorTimeout](data)
	case KindRouterPolicyInvariant:
		return decodeAs[RouterPolicyInvariant](data)
	case KindWorkerStartupFailed:
		return decodeAs[WorkerStartupFailed](data)
	case KindWorkerCrashed:
		return decodeAs[WorkerCrashed](data)
	case KindQualityGateFailed:
		return decodeAs[QualityGateFailed](data)
	case KindDriverOverloaded:
		return decodeAs[DriverOverloaded](data)
	case KindUnknown:
		return decodeAs[Unknown](data)
	case KindTargetNotReady:
		return decodeAs[TargetNotReady](data)
	case KindContextLengthExceeded:
		return decodeAs[ContextLengthExceeded](data)
	case KindAssertionViolated:
		return decodeAs[AssertionViolated](data)
	case KindBaselineRegressed:
		return decodeAs[BaselineRegressed](data)
	case KindHostOverloaded:
		return decodeAs[HostOverloaded](data)
	case KindWarmupCircuitsOpen:
		return decodeAs[WarmupCircuitsOpen](data)
	}
	return nil, fmt.Errorf("unknown failure kind %q", kind)
}

func decodeAs[T Failure](data []byte) (Failure, error) {
	var f T
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decoding %s failure: %w", f.Kind(), err)
	}
	return f, nil
}
