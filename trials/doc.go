// Package trials is the trial spec model: strict YAML decoding, validation
// with errors that name their path, defaults and sweep-matrix expansion.
package trials
