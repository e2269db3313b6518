package sim

import (
	"fmt"

	"github.com/autoinfer/autoinfer/target/tokenizer"
)

// checkBlind refuses what the engine cannot serve of a prompt's blind
// spans (tokenizer.Span.Blind): a malformed one (ids as well, no Key to
// name its content, a negative length), or any on an engine that reads
// prompt ids, which a blind span does not have: one that records KV
// events (their BlockStored carries the blocks' token ids). The engine's
// prefix cache, scheduler and step model need only the blocks' hashes
// and the prompt's length, which feedBlind gives without ids.
func checkBlind(spans []tokenizer.Span, kvEvents bool) error {
	for i, sp := range spans {
		switch {
		case sp.Blind == 0:
			continue
		case sp.Blind < 0:
			return fmt.Errorf("sim fleet: span %d: blind span of negative length %d", i, sp.Blind)
		case sp.IDs != nil:
			return fmt.Errorf("sim fleet: span %d: blind span of %d tokens with %d ids (a blind span's ids were never drawn)", i, sp.Blind, len(sp.IDs))
		case sp.Key == 0:
			return fmt.Errorf("sim fleet: span %d: blind span of %d tokens with Key 0 (only its Key names its content)", i, sp.Blind)
		case kvEvents:
			return fmt.Errorf("sim fleet: span %d: blind span on an engine that publishes KV events: KV events need token ids", i)
		}
	}
	return nil
}
