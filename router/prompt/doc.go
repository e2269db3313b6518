// Package prompt reads the text of prompt-like JSON values (a completion's
// prompt, chat message content, embeddings input) for the router: the text
// cache_aware matches on (AppendText) and routing_threshold's token
// estimate (Count).
//
// Both walk a value once, in document order, so their cost is linear in
// the value's size whatever its shape: a member that is skipped is scanned
// once and never re-parsed, and nothing is decoded twice. The walk descends
// at most MaxDepth levels; deeper nesting is an error, so a body of deeply
// nested arrays costs no more than a flat prompt of the same size.
//
// The input is expected to be valid JSON (the router has already decoded
// the body); malformed input yields an error, never a panic.
package prompt
