package cmd

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ledgerTable is tabular output; the same rows render as an aligned text
// table or as CSV.
type ledgerTable struct {
	header []string
	rows   [][]string
}

func (t *ledgerTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// ledgerRender writes tbl as a table or CSV, or v as indented JSON.
func ledgerRender(w io.Writer, format string, tbl ledgerTable, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "csv":
		// WriteAll flushes and reports the first error of any write.
		cw := csv.NewWriter(w)
		return cw.WriteAll(append([][]string{tbl.header}, tbl.rows...))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tbl.header, "\t"))
	for _, r := range tbl.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// ledgerNum formats a metric compactly and exactly enough to compare.
func ledgerNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// noValue is how tables show a figure that was not measured (NULL).
const noValue = "–"

// ledgerOptNum is ledgerNum, or noValue for nil.
func ledgerOptNum[T int64 | float64](v *T) string {
	if v == nil {
		return noValue
	}
	return ledgerNum(float64(*v))
}

// ledgerJSONKeys lists a struct type's JSON keys in declaration order,
// flattening embedded structs as encoding/json does.
func ledgerJSONKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, ledgerJSONKeys(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	return out
}

// ledgerFlatten renders v's JSON fields as strings under keys: strings bare,
// null as null (empty for CSV, noValue for people), anything else as
// compact JSON.
func ledgerFlatten(v any, keys []string, null string) ([]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		raw := m[k]
		var s string
		switch {
		case len(raw) == 0 || string(raw) == "null":
			out[i] = null
		case json.Unmarshal(raw, &s) == nil:
			out[i] = s
		default:
			out[i] = string(raw)
		}
	}
	return out, nil
}
