package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Every trace and dataset loader takes a file of any bytes and returns
// its entries or an error, never a panic: Mooncake and Azure traces (and
// their detection), sharegpt, burstgpt and custom datasets.
func FuzzLoaders(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":0,"input_length":10,"output_length":2,"hash_ids":[1,2]}` + "\n" + `{"timestamp":5,"input_length":3,"output_length":1,"hash_ids":[1]}`,
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n",
		`[{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"hello"}]}]`,
		"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n",
		`{"prompt":"a b c","output_tokens":3}` + "\n",
		`{"timestamp":-1,"input_length":-5}`, "[", "\x00\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ReadTrace(bytes.NewReader(data))
		_, _ = ReadAzureTrace(bytes.NewReader(data))
		_, _ = DetectTraceFormat(data)
		path := filepath.Join(t.TempDir(), "data")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = readShareGPT(path)
		_, _ = readBurstGPT(path)
		_, _ = readCustom(path)
		for _, kind := range []string{ShareGPT, BurstGPT, Custom, Trace} {
			w := Workload{Kind: kind, Path: path}
			if _, err := w.Footprint(0); err == nil && kind == Trace {
				if _, err := ReadTraceFile(path, FormatAuto); err != nil {
					t.Fatalf("Footprint read a trace ReadTraceFile refuses: %v", err)
				}
			}
		}
	})
}
