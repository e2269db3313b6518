package targetkinds

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/engine"
	"github.com/autoinfer/autoinfer/trials/field"
)

// TestKindsConformance runs the target.Options contract against every
// registered kind: unique names, options that are pointers to structs
// whose every exported field is a spec key (yaml) with a canonical form
// (json) or is excluded from both, defaults that survive validation's
// field checks, and problems reported as *field.Error.
func TestKindsConformance(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range All() {
		t.Run(k.Name, func(t *testing.T) {
			if k.Name == "" || seen[k.Name] {
				t.Fatalf("kind name %q empty or registered twice", k.Name)
			}
			seen[k.Name] = true
			opts := k.New()
			rt := reflect.TypeOf(opts)
			if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
				t.Fatalf("New returns %s, want a pointer to a struct", rt)
			}
			checkTags(t, rt.Elem())
			if k.New() == opts {
				t.Error("New returned the same options twice")
			}
			opts.Default()
			err := opts.Validate(target.Topology{Replicas: 1, Engine: engine.Config{Model: "m"}})
			for _, e := range field.Flatten(err) {
				var fe *field.Error
				if !errors.As(e, &fe) || fe.Path == "" {
					t.Errorf("problem %v is not a *field.Error naming its key", e)
				}
			}
		})
	}
	if len(seen) < 3 || All()[0].Name != "sim" {
		t.Errorf("kinds %v: want sim (the default) first, then static and process", seen)
	}
}

// checkTags wants every exported field of an options struct to carry a
// yaml key and a json key with omitempty (or "-" for both); an embedded
// struct inlined in YAML (simtarget.Source), whose fields encoding/json
// flattens the same way, is checked field by field.
func checkTags(t *testing.T, rt reflect.Type) {
	t.Helper()
	for f := range rt.Fields() {
		if !f.IsExported() {
			continue
		}
		y, j := f.Tag.Get("yaml"), f.Tag.Get("json")
		if f.Anonymous && y == ",inline" && j == "" && f.Type.Kind() == reflect.Struct {
			checkTags(t, f.Type)
			continue
		}
		if y == "" || j == "" || (y == "-") != (j == "-") {
			t.Errorf("field %s: yaml %q json %q, want both keys or both \"-\"", f.Name, y, j)
		}
		if y != "-" && !strings.HasSuffix(j, ",omitempty") {
			t.Errorf("field %s: json %q lacks omitempty: an unset key would change the hash of every spec", f.Name, j)
		}
	}
}
