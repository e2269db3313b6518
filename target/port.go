package target

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for a free TCP port on host by listening on port
// 0 and closing the listener. The port is free when FreePort returns but not
// reserved: another process can take it before the worker binds it. Targets
// that run servers in-process pass the listener itself instead; the process
// target accepts the small race because a child process cannot inherit a
// listener from a command template such as `vllm serve --port {port}`.
func FreePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("releasing probe port %d: %w", port, err)
	}
	return port, nil
}
