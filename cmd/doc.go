// Package cmd is autoinfer's cobra command tree. Every command returns an
// error; errors that carry an ExitCode (see exit.go) pick the process exit
// status so scripts can tell bad input from a failed trial from broken
// infrastructure.
package cmd
