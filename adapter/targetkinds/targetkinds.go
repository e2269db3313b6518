package targetkinds

import (
	"github.com/autoinfer/autoinfer/target"
	"github.com/autoinfer/autoinfer/target/kubernetes"
	"github.com/autoinfer/autoinfer/target/process"
	"github.com/autoinfer/autoinfer/target/simtarget"
	"github.com/autoinfer/autoinfer/target/static"
)

// All registers every target kind a trial spec can name. The first is the
// default of a spec that names none. Adding a kind is one entry here.
func All() []target.Kind {
	return []target.Kind{
		{Name: simtarget.Kind, New: func() target.Options { return new(simtarget.Options) }},
		{Name: static.Kind, New: func() target.Options { return new(static.Options) }},
		{Name: process.Kind, New: func() target.Options { return new(process.Options) }},
		{Name: kubernetes.Kind, New: func() target.Options { return new(kubernetes.Options) }},
	}
}
