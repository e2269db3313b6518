package adapter

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/autoinfer/autoinfer/ledger"
)

// spool holds a trial's request records in a temporary file as they
// complete, so a run's memory does not grow with its length; the ledger
// reads them back inside its one write (ledger.RecordSeq), so the ledger
// never holds part of a trial. The file is unlinked as soon as it is open
// where the system allows it: nothing is left behind however the process
// ends (Ctrl-C, an error, a kill). Elsewhere close removes it.
type spool struct {
	f    *os.File
	name string // set while the file still has a name to remove
	w    *bufio.Writer
	enc  *gob.Encoder
	n    int
	err  error // the first write error; records reports it
}

// spooled is one record as the spool encodes it (gob, compact and exact
// for floats); gob decodes an empty list as nil, so EmptyITLs keeps the
// difference the ledger's itls column shows ("[]" against "null").
type spooled struct {
	R         ledger.Request
	EmptyITLs bool
}

// newSpool opens an empty spool in the system's temporary directory.
func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "autoinfer-records-*.gob")
	if err != nil {
		return nil, fmt.Errorf("spooling request records: %w", err)
	}
	s := &spool{f: f}
	if err := os.Remove(f.Name()); err != nil {
		s.name = f.Name() // an open file cannot be unlinked here: close removes it
	}
	s.w = bufio.NewWriterSize(f, 64<<10)
	s.enc = gob.NewEncoder(s.w)
	return s, nil
}

// add appends r; a write error is kept for records to report.
func (s *spool) add(r ledger.Request) {
	if s.err != nil {
		return
	}
	if err := s.enc.Encode(spooled{R: r, EmptyITLs: r.ITLs != nil && len(r.ITLs) == 0}); err != nil {
		s.err = fmt.Errorf("spooling request record %d: %w", r.Index, err)
		return
	}
	s.n++
}

// records reads the spool back from its start, in the order the records
// were added; it ends with the first error (of a write or a read).
func (s *spool) records() iter.Seq2[ledger.Request, error] {
	return func(yield func(ledger.Request, error) bool) {
		if s.err == nil {
			if err := s.w.Flush(); err != nil {
				s.err = fmt.Errorf("spooling request records: %w", err)
			}
		}
		if s.err != nil {
			yield(ledger.Request{}, s.err)
			return
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			yield(ledger.Request{}, fmt.Errorf("reading spooled request records: %w", err))
			return
		}
		dec := gob.NewDecoder(bufio.NewReader(s.f))
		for i := range s.n {
			var r spooled // fresh: gob leaves the fields it does not send as they were
			if err := dec.Decode(&r); err != nil {
				yield(ledger.Request{}, fmt.Errorf("reading spooled request record %d of %d: %w", i+1, s.n, err))
				return
			}
			if r.EmptyITLs {
				r.R.ITLs = ledger.Floats{}
			}
			if !yield(r.R, nil) {
				return
			}
		}
	}
}

// close releases the file (and removes it where it still has a name).
func (s *spool) close() error {
	err := s.f.Close()
	if s.name != "" {
		err = errors.Join(err, os.Remove(s.name))
		s.name = ""
	}
	return err
}
