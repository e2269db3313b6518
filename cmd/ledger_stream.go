package cmd

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// tableFlushRows bounds how many rendered rows a streamed table holds before
// it flushes: columns realign per block, memory stays flat with --all.
const tableFlushRows = 500

// rowStream writes a listing one row at a time in the chosen format, so
// `ledger list --all` on a large ledger never holds every row.
type rowStream struct {
	format string
	w      io.Writer
	tw     *tabwriter.Writer
	cw     *csv.Writer
	n      int
}

func newRowStream(w io.Writer, format string, header []string) (*rowStream, error) {
	s := &rowStream{format: format, w: w}
	switch format {
	case "json":
		return s, nil
	case "csv":
		s.cw = csv.NewWriter(w)
		if err := s.cw.Write(header); err != nil {
			return nil, fmt.Errorf("writing csv: %w", err)
		}
	default:
		s.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if _, err := fmt.Fprintln(s.tw, strings.Join(header, "\t")); err != nil {
			return nil, fmt.Errorf("writing table: %w", err)
		}
	}
	return s, nil
}

// add writes one row: cells for table and csv, v (the whole row) for json,
// framed exactly as encoding/json indents a slice.
func (s *rowStream) add(cells []string, v any) error {
	s.n++
	switch s.format {
	case "json":
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return fmt.Errorf("encoding row: %w", err)
		}
		sep := ",\n  "
		if s.n == 1 {
			sep = "[\n  "
		}
		_, err = fmt.Fprintf(s.w, "%s%s", sep, b)
		return err
	case "csv":
		return s.cw.Write(cells)
	}
	if _, err := fmt.Fprintln(s.tw, strings.Join(cells, "\t")); err != nil {
		return err
	}
	if s.n%tableFlushRows == 0 {
		return s.tw.Flush()
	}
	return nil
}

// close ends the listing ("[]" for an empty json listing).
func (s *rowStream) close() error {
	switch s.format {
	case "json":
		end := "\n]\n"
		if s.n == 0 {
			end = "[]\n"
		}
		_, err := io.WriteString(s.w, end)
		return err
	case "csv":
		s.cw.Flush()
		return s.cw.Error()
	}
	return s.tw.Flush()
}
