package adapter

import (
	"encoding/json"
	"testing"

	"github.com/autoinfer/autoinfer/failure"
	"github.com/autoinfer/autoinfer/ledger"
)

// The runner's result survives the trip through its log line: the row,
// its typed failure and violations, the request records.
func TestRemoteResultRoundTrip(t *testing.T) {
	f := failure.WorkerStartupFailed{Worker: "collocated[0]", Detail: "pod ns/p: ErrImagePull", ExitCode: 2}
	enc, err := encodeFailure(f)
	if err != nil {
		t.Fatal(err)
	}
	v, err := encodeFailure(failure.WorkerCrashed{Worker: "decode[1]", ExitCode: 137})
	if err != nil {
		t.Fatal(err)
	}
	in := RemoteResult{
		Row:      ledger.Trial{Name: "t", Status: ledger.StatusFailed, Identity: ledger.Identity{TargetKind: "kubernetes", Hardware: "1xH100", HardwareConfig: ledger.JSON(`{"gpu_product":"H100"}`)}},
		Failure:  enc,
		Requests: []ledger.Request{{Index: 3, InputTokens: 64, OutputTokens: 8, Status: ledger.RequestOK, ITLs: ledger.Floats{1.5, 2}}},
	}
	in.Violations = append(in.Violations, *v)
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out RemoteResult
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	got, err := out.Failure.decode()
	if err != nil || got != f {
		t.Fatalf("failure %#v (%v), want %#v", got, err, f)
	}
	if vv, err := out.Violations[0].decode(); err != nil || vv.Kind() != failure.KindWorkerCrashed {
		t.Fatalf("violation %v (%v)", vv, err)
	}
	if out.Row.Hardware != "1xH100" || string(out.Row.HardwareConfig) != `{"gpu_product":"H100"}` || len(out.Requests) != 1 || out.Requests[0].ITLs[1] != 2 {
		t.Fatalf("row %+v requests %+v", out.Row.Identity, out.Requests)
	}
}
