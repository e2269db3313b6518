// Package targetkinds is the registry of target kinds, part of the
// composition root: the one place that knows every target implementation.
// The trial spec model (trials) decodes, defaults and validates a spec's
// target section through the registry, so it depends on no target
// implementation; the trial runner (adapter) provisions through the
// options the registry made.
package targetkinds
