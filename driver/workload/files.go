package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/autoinfer/autoinfer/trials/field"
)

// Files lists the trace and dataset files the workload reads, in the
// order it reads them (today at most one: path).
func (w Workload) Files() []string {
	if w.Path == "" {
		return nil
	}
	return []string{w.Path}
}

// ResolvePaths returns w with a relative path taken relative to dir (a
// spec's directory), so a spec means the same file from any working
// directory.
func (w Workload) ResolvePaths(dir string) Workload {
	if w.Path != "" && !filepath.IsAbs(w.Path) {
		w.Path = filepath.Join(dir, w.Path)
	}
	return w
}

// ContentHash is the SHA-256 (hex) of the bytes of every file the workload
// reads, each prefixed by its length, so the identity of a workload covers
// what it replays, not the name it was read under. A workload that reads
// no file has the empty hash "".
func ContentHash(w Workload) (string, error) {
	files := w.Files()
	if len(files) == 0 {
		return "", nil
	}
	h := sha256.New()
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", field.Errorf("path", "%v", err)
		}
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(data)))
		h.Write(n[:])
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Longest is the request of a workload's files that asks the most of an
// engine's context: input plus output tokens.
type Longest struct {
	InputTokens, OutputTokens int
	// File and Line locate it (Line 0 when the format has no lines that
	// map to requests one to one, as sharegpt's JSON array).
	File string
	Line int
}

// Tokens is input plus output tokens, what max_model_len must hold.
func (l Longest) Tokens() int { return l.InputTokens + l.OutputTokens }

// FileReport is what Check found in a workload's files.
type FileReport struct {
	Files    []string
	Hash     string
	Requests int
	Longest  Longest
	// InputTokens and OutputTokens are the totals over the requests.
	InputTokens, OutputTokens int64
}

// Check opens and parses every file the workload reads, as a trial would
// (format, every line, lengths > 0; a trace's window), and returns its
// content hash and its longest request, for validation to compare with an
// engine's max_model_len before anything runs. tok counts prompts (nil: the
// sim tokenizer). A workload that reads no file gives an empty report.
func Check(w Workload, tok Tokenizer) (FileReport, error) {
	if err := w.Validate(); err != nil {
		return FileReport{}, err
	}
	w = w.WithDefaults()
	if tok == nil {
		tok = Sim{}
	}
	rep := FileReport{Files: w.Files()}
	if len(rep.Files) == 0 {
		return rep, nil
	}
	var err error
	if rep.Hash, err = ContentHash(w); err != nil {
		return rep, err
	}
	if w.Kind == Trace {
		lines, err := ReadTraceFile(w.Path, w.Format)
		if err != nil {
			return rep, field.Errorf("path", "%v", err)
		}
		if lines, err = sliceTrace(w, lines); err != nil {
			return rep, err
		}
		rep.Requests = len(lines)
		for _, l := range lines {
			in := l.InputLength
			if l.Prompt != "" {
				in = tok.Count(l.Prompt)
			}
			rep.InputTokens += int64(in)
			rep.OutputTokens += int64(l.OutputLength)
			if in+l.OutputLength > rep.Longest.Tokens() {
				rep.Longest = Longest{InputTokens: in, OutputTokens: l.OutputLength, File: w.Path, Line: l.Line}
			}
		}
		return rep, nil
	}
	// Dataset kinds: build every entry (sonnet draws one prompt to read its text).
	n := 0
	if w.Kind == Sonnet {
		n = 1
	}
	fixed := func(string, int) *rand.Rand { return rand.New(rand.NewPCG(0, 0)) }
	items, err := Build(w, n, fixed, tok)
	if err != nil {
		return rep, err
	}
	rep.Requests = len(items)
	for _, it := range items {
		rep.InputTokens += int64(it.InputTokens)
		rep.OutputTokens += int64(it.OutputTokens)
		if it.InputTokens+it.OutputTokens > rep.Longest.Tokens() {
			rep.Longest = Longest{InputTokens: it.InputTokens, OutputTokens: it.OutputTokens, File: w.Path}
		}
	}
	return rep, nil
}
