package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadTraceFile reads a trace file in the given format (FormatAuto or ""
// detects it from the first record). Every error names the file and line.
func ReadTraceFile(path, format string) ([]TraceLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if format == "" || format == FormatAuto {
		if format, err = DetectTraceFormat(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	var lines []TraceLine
	switch format {
	case FormatMooncake:
		lines, err = ReadTrace(bytes.NewReader(data))
	case FormatAzure:
		lines, err = ReadAzureTrace(bytes.NewReader(data))
	default:
		return nil, fmt.Errorf("%s: unknown trace format %q (want %s, %s or %s)", path, format, FormatAuto, FormatMooncake, FormatAzure)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// DetectTraceFormat tells the format from the first non-blank line: a JSON
// object is Mooncake JSON Lines, a CSV header naming TIMESTAMP,
// ContextTokens and GeneratedTokens is the Azure trace.
func DetectTraceFormat(data []byte) (string, error) {
	rest := data
	for no := 1; len(rest) > 0; no++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")))
		if len(line) == 0 {
			continue
		}
		if line[0] == '{' {
			return FormatMooncake, nil
		}
		cols := map[string]bool{}
		for _, c := range strings.Split(string(line), ",") {
			cols[strings.TrimSpace(c)] = true
		}
		if cols["TIMESTAMP"] && cols["ContextTokens"] && cols["GeneratedTokens"] {
			return FormatAzure, nil
		}
		return "", fmt.Errorf("line %d: format: the first record is neither a JSON object (Mooncake JSON Lines) nor the Azure CSV header TIMESTAMP,ContextTokens,GeneratedTokens: %.60q", no, line)
	}
	return "", errors.New("line 1: trace has no requests")
}

// ReadTrace parses a Mooncake-style JSONL trace strictly: unknown keys are
// errors, and each error starts with its line number ("3: ...").
func ReadTrace(r io.Reader) ([]TraceLine, error) {
	var lines []TraceLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for no := 1; sc.Scan(); no++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l TraceLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		l.Line = no
		if err := l.validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		if err := ordered(lines, l); err != nil {
			return nil, err
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if len(lines) == 0 {
		return nil, errors.New("line 1: trace has no requests")
	}
	return lines, nil
}

// ordered refuses a timestamp that goes back from the previous line's.
func ordered(lines []TraceLine, l TraceLine) error {
	if len(lines) == 0 || l.Timestamp == nil {
		return nil
	}
	prev := lines[len(lines)-1]
	if prev.Timestamp != nil && *l.Timestamp < *prev.Timestamp {
		return fmt.Errorf("line %d: timestamp: %v goes back from %v on line %d", l.Line, *l.Timestamp, *prev.Timestamp, prev.Line)
	}
	return nil
}

// azureLayouts are the TIMESTAMP forms of the Azure LLM inference traces
// (2023: "2023-11-16 18:15:46.6805900"; 2024: "2024-05-10 00:00:00.009930+00:00").
// Go parses any fractional seconds after the seconds field.
var azureLayouts = []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"}

// ReadAzureTrace parses the Azure LLM inference trace CSV (TIMESTAMP,
// ContextTokens, GeneratedTokens; other columns are ignored): timestamps
// become milliseconds from the first row, context tokens the input length
// and generated tokens the output length. Errors start with the line.
func ReadAzureTrace(r io.Reader) ([]TraceLine, error) {
	rd := csv.NewReader(r)
	rd.FieldsPerRecord = -1
	header, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("line 1: reading the header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, want := range []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"} {
		if _, ok := col[want]; !ok {
			return nil, fmt.Errorf("line 1: header: no %s column (want the Azure trace's TIMESTAMP,ContextTokens,GeneratedTokens)", want)
		}
	}
	var lines []TraceLine
	var t0 time.Time
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		no, _ := rd.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		l, t, err := azureRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", no, err)
		}
		if len(lines) == 0 {
			t0 = t
		}
		ms := float64(t.Sub(t0)) / float64(time.Millisecond)
		l.Timestamp, l.Line = &ms, no
		if err := ordered(lines, l); err != nil {
			return nil, err
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, errors.New("line 2: trace has no requests")
	}
	return lines, nil
}

func azureRow(rec []string, col map[string]int) (TraceLine, time.Time, error) {
	field := func(name string) string {
		if i := col[name]; i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	var t time.Time
	var err error
	for _, layout := range azureLayouts {
		if t, err = time.Parse(layout, field("TIMESTAMP")); err == nil {
			break
		}
	}
	if err != nil {
		return TraceLine{}, t, fmt.Errorf("TIMESTAMP: %q is not a date and time like 2023-11-16 18:15:46.6805900", field("TIMESTAMP"))
	}
	in, err := strconv.Atoi(field("ContextTokens"))
	if err != nil || in <= 0 {
		return TraceLine{}, t, fmt.Errorf("ContextTokens: must be an integer > 0, got %q", field("ContextTokens"))
	}
	out, err := strconv.Atoi(field("GeneratedTokens"))
	if err != nil || out <= 0 {
		return TraceLine{}, t, fmt.Errorf("GeneratedTokens: must be an integer > 0, got %q", field("GeneratedTokens"))
	}
	return TraceLine{InputLength: in, OutputLength: out}, t, nil
}
