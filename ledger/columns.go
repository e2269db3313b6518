package ledger

import (
	"reflect"
	"slices"
	"strings"
)

// columns lists the db-tagged fields of a struct type, flattening embedded
// structs, in declaration order: the single source for INSERT and SELECT
// column lists, so the Go types and the statements cannot drift apart.
func columns(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, columns(f.Type)...)
			continue
		}
		if tag := f.Tag.Get("db"); tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// insertSQL builds "INSERT INTO table (a, b) VALUES (:a, :b)" for sqlx's
// named binding, leaving out the skipped columns.
func insertSQL(table string, cols []string, skip ...string) string {
	var names []string
	for _, c := range cols {
		if !slices.Contains(skip, c) {
			names = append(names, c)
		}
	}
	return "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ") VALUES (:" + strings.Join(names, ", :") + ")"
}
