package trials

import _ "embed"

// Starter is the commented spec `autoinfer trial init` writes. A test
// checks that it validates.
//
//go:embed starter.yaml
var Starter []byte
