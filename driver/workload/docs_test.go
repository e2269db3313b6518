package workload

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// traceBlockRE finds the fenced json and csv examples of a docs page.
var traceBlockRE = regexp.MustCompile("(?s)```(json|csv)\n(.*?)```")

// TestDocsShowEveryTraceFormat is issue 19, acceptance 6 (workloads):
// docs/workloads.md's trace section shows each trace format with an
// example line, and every example there parses as its format says.
func TestDocsShowEveryTraceFormat(t *testing.T) {
	doc, err := os.ReadFile("../../docs/workloads.md")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(doc, []byte("### trace "))
	end := bytes.Index(doc, []byte("### sharegpt "))
	if start < 0 || end < start {
		t.Fatal("docs/workloads.md: no trace section before the sharegpt section")
	}
	shown := map[string]int{}
	for _, m := range traceBlockRE.FindAllSubmatch(doc[start:end], -1) {
		format := map[string]string{"json": FormatMooncake, "csv": FormatAzure}[string(m[1])]
		if got, err := DetectTraceFormat(m[2]); err != nil || got != format {
			t.Errorf("example detected as %q (%v), fenced as %s:\n%s", got, err, m[1], m[2])
			continue
		}
		var lines []TraceLine
		if format == FormatMooncake {
			lines, err = ReadTrace(bytes.NewReader(m[2]))
		} else {
			lines, err = ReadAzureTrace(bytes.NewReader(m[2]))
		}
		if err != nil || len(lines) == 0 {
			t.Errorf("%s example does not parse (%d lines): %v\n%s", format, len(lines), err, m[2])
		}
		shown[format] += len(lines)
	}
	for _, f := range []string{FormatMooncake, FormatAzure} {
		if shown[f] == 0 {
			t.Errorf("docs/workloads.md shows no %s example line", f)
		}
	}
	if !strings.Contains(string(doc[start:end]), "`auto`") {
		t.Error("the trace section does not say how the format is detected")
	}
}
