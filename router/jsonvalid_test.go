package router

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

var jsonSeeds = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"d"}`, `[1,2,]`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`,
	`{"a" : 1 , "b" : [ true , false , null ] }`, `"x"`, `"\u00e9\n\t\"\\\/"`, `"\u00g0"`, `"\x"`, "\"a\x01b\"",
	"\"\xff\xfe\"", `-0`, `0.5e-3`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `1E+9`, `-12.34E56`, `tru`, `nul`, `nulll`,
	`{} {}`, `[[[[[]]]]]`, `[[[[[]]]]`, `]`, `}`, `{"a":1]`, `[1}`, "\t{\r\n}\n", `{"a":"b" "c":1}`, `[1 2]`,
	`{"a":{"b":{"c":[1,[2,[3]]]}}}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

// TestValidJSONAgreesWithEncodingJSON compares validJSON with json.Valid on
// hand-picked cases and on random mutations of valid documents.
func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid says %v", s, got, want)
		}
	}
	for _, s := range jsonSeeds {
		check(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "{}[]\":,.-+eE0123456789 \\/\tnultrfasx\x01\xff"
	// The validator runs on one goroutine, so the race detector has nothing
	// to find here and only makes each case ten times dearer: under it a
	// tenth of the mutations run (FuzzValidJSON searches further).
	mutations := 50000
	if raceEnabled {
		mutations = 5000
	}
	for range mutations {
		b := []byte(jsonSeeds[r.IntN(len(jsonSeeds))])
		for range 1 + r.IntN(3) {
			switch op := r.IntN(3); {
			case op == 0 && len(b) > 0: // replace
				b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
			case op == 1: // insert
				i := r.IntN(len(b) + 1)
				b = append(b[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			case len(b) > 0: // delete
				i := r.IntN(len(b))
				b = append(b[:i], b[i+1:]...)
			}
		}
		check(string(b))
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// BenchmarkValidJSON runs validJSON and json.Valid on a 2k-token
// completions body (compare their MB/s).
//
//	go test -run '^$' -bench ValidJSON ./router/
func BenchmarkValidJSON(b *testing.B) {
	prompt := strings.Repeat("the model serves requests with a shared prefix cache ", 160)
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": prompt, "max_tokens": 16})
	for name, valid := range map[string]func([]byte) bool{"validJSON": validJSON, "encoding_json": json.Valid} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func TestValidJSONDoesNotAllocate(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x\\n", 500) + `"}],"n":[1,2.5e3,{"a":null}]}`)
	if n := testing.AllocsPerRun(100, func() { validJSON(body) }); n != 0 {
		t.Errorf("validJSON allocates %.0f times per call", n)
	}
}
