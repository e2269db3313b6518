package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/autoinfer/autoinfer/trials"
)

// decisionFile is trial run --record-decisions FILE: every routing decision
// of the virtual-clock trials as JSON lines, written to a temporary file
// beside FILE that replaces it once every trial ran, so an interrupted or
// broken run leaves no half-written record.
type decisionFile struct {
	path string
	tmp  *os.File
	buf  *bufio.Writer
}

// openDecisions refuses a trial on the real clock (its decisions are made
// in a router process over HTTP and not recorded yet); nil without a path.
func openDecisions(path string, ts []trials.Trial) (*decisionFile, error) {
	if path == "" {
		return nil, nil
	}
	for _, t := range ts {
		if !t.Virtual() {
			return nil, usageErr("--record-decisions: trial %s runs on the real clock; decisions are recorded under the virtual clock only (add --clock virtual)", t.Name)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".decisions-*.jsonl")
	if err != nil {
		return nil, usageErr("--record-decisions %s: %v", path, err)
	}
	return &decisionFile{path: path, tmp: tmp, buf: bufio.NewWriterSize(tmp, 1<<16)}, nil
}

// writer is where the runner writes the lines (nil: not recording).
func (d *decisionFile) writer() io.Writer {
	if d == nil {
		return nil
	}
	return d.buf
}

// commit moves the finished record to its path.
func (d *decisionFile) commit() error {
	if d == nil {
		return nil
	}
	err := errors.Join(d.buf.Flush(), d.tmp.Chmod(0o644), d.tmp.Close())
	if err == nil {
		err = os.Rename(d.tmp.Name(), d.path)
	}
	if err != nil {
		os.Remove(d.tmp.Name())
		return withCode(ExitInfra, fmt.Errorf("writing --record-decisions %s: %w", d.path, err))
	}
	d.tmp = nil
	return nil
}

// discard removes an uncommitted record.
func (d *decisionFile) discard() {
	if d == nil || d.tmp == nil {
		return
	}
	d.tmp.Close()
	os.Remove(d.tmp.Name())
}
