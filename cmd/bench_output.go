package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/driver/metrics"
)

// printResults writes vllm bench serve's results block (its labels and
// layout), then autoinfer's schedule and error lines.
func printResults(w io.Writer, res *driver.Result, metricList, percentiles string, goodput bool) {
	s := res.Summary
	line := func(label string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(w, "%-40s %-10.2f\n", label, x)
		default:
			fmt.Fprintf(w, "%-40s %-10v\n", label, x)
		}
	}
	fmt.Fprintf(w, "%s\n", center(" Serving Benchmark Result ", '='))
	line("Successful requests:", s.Completed)
	line("Failed requests:", s.Failed)
	if s.MaxConcurrency != nil {
		line("Maximum request concurrency:", *s.MaxConcurrency)
	}
	line("Request rate configured (RPS):", rateValue(float64(s.RequestRate)))
	line("Benchmark duration (s):", s.Duration)
	line("Total input tokens:", s.TotalInputTokens)
	line("Total generated tokens:", s.TotalOutputTokens)
	line("Request throughput (req/s):", s.RequestThroughput)
	if goodput && s.RequestGoodput != nil {
		line("Request goodput (req/s):", *s.RequestGoodput)
	}
	line("Output token throughput (tok/s):", s.OutputThroughput)
	line("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS)
	line("Peak concurrent requests:", s.MaxConcurrentRequests)
	line("Total token throughput (tok/s):", s.TotalTokenThroughput)
	titles := map[string][2]string{
		"ttft": {"Time to First Token", "TTFT"},
		"tpot": {"Time per Output Token (excl. 1st token)", "TPOT"},
		"itl":  {"Inter-token Latency", "ITL"},
		"e2el": {"End-to-end Latency", "E2EL"},
	}
	all := summaryMap(s)
	for _, m := range strings.Split(metricList, ",") {
		m = strings.TrimSpace(m)
		t := titles[m]
		fmt.Fprintf(w, "%s\n", center(t[0], '-'))
		line(fmt.Sprintf("Mean %s (ms):", t[1]), all["mean_"+m+"_ms"])
		line(fmt.Sprintf("Median %s (ms):", t[1]), all["median_"+m+"_ms"])
		for _, p := range strings.Split(percentiles, ",") {
			pf, _ := strconv.ParseFloat(strings.TrimSpace(p), 64)
			word := metrics.PercentileWord(pf)
			line(fmt.Sprintf("P%s %s (ms):", word, t[1]), all["p"+word+"_"+m+"_ms"])
		}
	}
	fmt.Fprintf(w, "%s\n", center("Schedule (autoinfer)", '-'))
	line("Achieved request rate (req/s):", s.AchievedRequestRate)
	line("Mean schedule delay (ms):", s.MeanScheduleDelayMs)
	line("P99 schedule delay (ms):", s.P99ScheduleDelayMs)
	line("Max schedule delay (ms):", s.MaxScheduleDelayMs)
	line("ITLs read in bursts (%):", 100*s.ClientBurstITLFraction)
	line("P99 client scheduling latency (ms):", s.ClientSchedP99Ms)
	if s.ClientLag != nil {
		fmt.Fprintf(w, "WARNING %s: the ITL figures describe the client, not the server\n", s.ClientLag)
	}
	if s.Failed > 0 {
		line("Errors by status:", fmt.Sprint(s.ErrorsByStatus))
		line("Errors by type:", fmt.Sprint(s.ErrorsByType))
	}
	if res.WarmupFailed > 0 {
		line("Failed warm-up requests:", res.WarmupFailed)
	}
	fmt.Fprintf(w, "%s\n", strings.Repeat("=", 50))
}

// summaryMap flattens the summary by its JSON keys.
func summaryMap(s driver.Summary) map[string]any {
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func center(title string, fill byte) string {
	pad := 50 - len(title)
	if pad <= 0 {
		return title
	}
	return strings.Repeat(string(fill), pad/2) + title + strings.Repeat(string(fill), pad-pad/2)
}

func rateValue(r float64) any {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return r
}

func rateString(r float64) string { return fmt.Sprint(rateValue(r)) }

func burstinessString(a driver.Arrival) string {
	a = a.Normalized()
	switch {
	case a.Kind == "constant":
		return "constant (evenly spaced)"
	case math.IsInf(a.RequestRate, 1):
		return "n/a (rate inf)"
	case a.Burstiness == 1:
		return "1.0 (Poisson process)"
	}
	return fmt.Sprintf("%v (Gamma distribution)", a.Burstiness)
}

func concurrencyString(c int) string {
	if c == 0 {
		return "None"
	}
	return strconv.Itoa(c)
}

// save writes the result JSON and the request export the flags ask for.
func (f *benchFlags) save(out io.Writer, res *driver.Result) error {
	if f.exportTo != "" {
		if err := writeOutput(f.exportTo, func(w io.Writer) error { return metrics.WriteJSONL(w, res.Requests) }); err != nil {
			return err
		}
		fmt.Fprintf(out, "Requests exported to %s\n", f.exportTo)
	}
	if !f.saveResult && !f.saveDetailed {
		return nil
	}
	b, err := resultJSON(res, f.saveDetailed)
	if err != nil {
		return err
	}
	meta, err := parseMetadata(f.metadata)
	if err != nil {
		return err
	}
	if b, err = withMetadata(b, meta); err != nil {
		return err
	}
	name := f.resultFilename
	if name == "" {
		name = defaultResultName(res.Summary)
	}
	path := filepath.Join(f.resultDir, name)
	if f.resultDir != "" {
		if err := os.MkdirAll(f.resultDir, 0o755); err != nil {
			return fmt.Errorf("creating result dir: %w", err)
		}
	}
	write := writeOutput
	if f.appendResult {
		write = appendOutput
	}
	if err := write(path, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return err
	}
	fmt.Fprintf(out, "Result saved to %s\n", path)
	return nil
}

// defaultResultName follows vllm: LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json
// with the rate printed as Python prints a float.
func defaultResultName(s driver.Summary) string {
	label := s.Label
	if label == "" {
		label = s.EndpointType
	}
	rate := "inf"
	if r := float64(s.RequestRate); !math.IsInf(r, 1) {
		rate = strconv.FormatFloat(r, 'f', -1, 64)
		if !strings.ContainsAny(rate, ".e") {
			rate += ".0"
		}
	}
	conc := ""
	if s.MaxConcurrency != nil {
		conc = fmt.Sprintf("-concurrency%d", *s.MaxConcurrency)
	}
	model := s.ModelID[strings.LastIndexByte(s.ModelID, '/')+1:]
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, rate, conc, model, s.Date)
}

// resultJSON is the summary, plus vllm's per-request arrays (seconds, as
// vllm writes them) when detailed.
func resultJSON(res *driver.Result, detailed bool) ([]byte, error) {
	b, err := json.Marshal(res.Summary)
	if err != nil || !detailed {
		return append(b, '\n'), err
	}
	n := len(res.Requests)
	d := struct {
		InputLens      []int       `json:"input_lens"`
		OutputLens     []int       `json:"output_lens"`
		TTFTs          []float64   `json:"ttfts"`
		ITLs           [][]float64 `json:"itls"`
		GeneratedTexts []string    `json:"generated_texts"`
		Errors         []string    `json:"errors"`
	}{make([]int, n), make([]int, n), make([]float64, n), make([][]float64, n), make([]string, n), make([]string, n)}
	for i, r := range res.Requests {
		d.InputLens[i], d.OutputLens[i], d.TTFTs[i] = r.InputTokens, r.OutputTokens, r.TTFTMs/1000
		d.ITLs[i] = make([]float64, len(r.ITLMs))
		for k, v := range r.ITLMs {
			d.ITLs[i][k] = v / 1000
		}
		d.GeneratedTexts[i], d.Errors[i] = r.GeneratedText, r.Error
	}
	extra, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	buf.WriteByte(',')
	buf.Write(extra[1:])
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

func writeOutput(path string, write func(io.Writer) error) error {
	return openWrite(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, write)
}

// appendOutput adds to the end of path (vllm's --append-result): results
// end with a newline, so the file holds one JSON object per line.
func appendOutput(path string, write func(io.Writer) error) error {
	return openWrite(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, write)
}

func openWrite(path string, flag int, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
