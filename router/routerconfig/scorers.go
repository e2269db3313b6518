package routerconfig

import (
	"fmt"
	"strconv"

	"github.com/autoinfer/autoinfer/router/policy"
	"github.com/autoinfer/autoinfer/trials/field"
)

// Scorer is one weighted term of the weighted policy (policy.ScorerNames).
type Scorer struct {
	Name   string  `yaml:"name" json:"name"`
	Weight float64 `yaml:"weight" json:"weight"`
}

// String is s as --scorer takes it: NAME=WEIGHT.
func (s Scorer) String() string { return s.Name + "=" + strconv.FormatFloat(s.Weight, 'g', -1, 64) }

// PolicyScorers is c's scorers as the policy takes them (nil: the
// policy's defaults).
func (c Config) PolicyScorers() []policy.Scorer {
	var out []policy.Scorer
	for _, s := range c.Scorers {
		out = append(out, policy.Scorer{Name: s.Name, Weight: s.Weight})
	}
	return out
}

func (c Config) validateScorers(l *field.Errors) {
	if len(c.Scorers) > 0 && c.Policy != policy.Weighted {
		l.Add("router.scorers", "only the %s policy combines scorers (policy is %q)", policy.Weighted, c.Policy)
	}
	for i, s := range c.Scorers {
		path := fmt.Sprintf("router.scorers[%d]", i)
		l.Check(field.OneOf(path+".name", s.Name, policy.ScorerNames()...), field.Above(path+".weight", s.Weight, 0))
	}
}

// FollowsKVEvents reports whether c's policy reads the workers' KV events
// (precise_prefix, or weighted with a precise_prefix scorer).
func (c Config) FollowsKVEvents() bool {
	if c.Policy == policy.PrecisePrefix {
		return true
	}
	if c.Policy != policy.Weighted {
		return false
	}
	scorers := c.PolicyScorers()
	if len(scorers) == 0 {
		scorers = policy.DefaultScorers()
	}
	for _, s := range scorers {
		if s.Name == policy.ScorerPrecisePrefix {
			return true
		}
	}
	return false
}
