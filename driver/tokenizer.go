package driver

import (
	"fmt"

	"github.com/autoinfer/autoinfer/driver/workload"
)

// tokenizer is cfg's tokenizer: the one given, else the workload's.
func (cfg Config) tokenizer() (workload.Tokenizer, error) {
	if cfg.Tokenizer != nil {
		return cfg.Tokenizer, nil
	}
	tok, err := workload.LoadTokenizer(cfg.Workload.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("workload.%w", err)
	}
	return tok, nil
}
