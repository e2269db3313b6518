// Command autoinfer measures LLM serving deployments: it provisions workers,
// routes traffic through a named policy, drives a seeded workload and records
// one ledger row per trial.
package main

import (
	"os"

	"github.com/autoinfer/autoinfer/cmd"
)

func main() {
	os.Exit(cmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
