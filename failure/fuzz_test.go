package failure

import (
	"reflect"
	"testing"
)

// Error bodies come from routers and workers: ParseErrorBody never panics
// and accepts only bodies with an error type.
func FuzzParseErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"error":{"message":"m","type":"pool_exhausted","param":null,"code":503,"retries":5,"pool_size":3,"open_circuits":1}}`,
		`{"error":{"type":"pd_connector_timeout","leg":"prefill","timeout_secs":"30s"},"request_id":"r"}`,
		`{"error":"text"}`, `{"error":{"type":7}}`, `[]`, `{`, `{"error":{"type":"x","retries":1e400}}`,
	} {
		f.Add(503, []byte(s))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		b, ok := ParseErrorBody(status, body)
		if ok && (b.Type == "" || b.Status != status) {
			t.Fatalf("accepted %q as %+v", body, b)
		}
		if !ok && b != (ErrorBody{}) {
			t.Fatalf("refused %q but returned %+v", body, b)
		}
	})
}

// Failure records are read back from ledgers people share: Decode never
// panics, and what it decodes re-encodes to the same failure.
func FuzzFailureCodec(f *testing.F) {
	kinds := Kinds()
	for i, s := range []string{`{"reason":"port_in_use","detail":"d"}`, `{"error_type":"pool_exhausted","count":3}`, `{}`, ``, `[`, `{"count":"x"}`} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kind := kinds[int(k)%len(kinds)]
		got, err := Decode(kind, data)
		if err != nil {
			return
		}
		if got.Kind() != kind {
			t.Fatalf("decoded a %s as %s", got.Kind(), kind)
		}
		k2, enc, err := Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(k2, enc)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip: %+v → %s → %+v (%v)", got, enc, again, err)
		}
	})
}
