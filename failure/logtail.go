package failure

import "strings"

// Bounds on a worker's log tail in a failure: enough to show the error
// that ended it (a flag it refused, a traceback's last frames), small
// enough for a ledger row.
const (
	LogTailMaxLines = 20
	LogTailMaxBytes = 4096
)

// LogTail bounds a worker's last output for a failure: its last
// LogTailMaxLines lines, at most LogTailMaxBytes bytes (a longer line is
// cut at its start), without trailing blank lines.
func LogTail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n\t "), "\n")
	if len(lines) > LogTailMaxLines {
		lines = lines[len(lines)-LogTailMaxLines:]
	}
	out := strings.Join(lines, "\n")
	if len(out) > LogTailMaxBytes {
		out = out[len(out)-LogTailMaxBytes:]
		if i := strings.IndexByte(out, '\n'); i >= 0 && i < len(out)-1 {
			out = out[i+1:]
		}
	}
	return out
}

// withLogTail appends a worker's log tail to a one-line message, its lines
// joined by " | " so that the message stays one line.
func withLogTail(msg, tail string) string {
	if tail == "" {
		return msg
	}
	return msg + "; last log lines: " + strings.Join(strings.Split(tail, "\n"), " | ")
}
