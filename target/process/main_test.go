package process

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
)

// helperEnv marks a re-executed test binary as a worker stand-in.
const helperEnv = "AUTOINFER_PROCESS_TEST_HELPER"

// TestMain lets the test binary play the worker: the tests run it again
// with helperEnv set and a mode as the first argument.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain modes:
//
//	serve PORT      /health 200; exits 0 on SIGTERM
//	stubborn PORT   like serve, but ignores SIGTERM and has a child that does too
//	unhealthy PORT  /health 503 forever, logging each probe
//	crash           writes to stderr and exits 3 at once
//	sleep           ignores SIGTERM and blocks (the stubborn worker's child)
func helperMain(args []string) int {
	fmt.Printf("pid=%d mode=%s role=%s\n", os.Getpid(), args[0], os.Getenv("HELPER_ROLE"))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	switch args[0] {
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: cannot load model weights")
		return 3
	case "sleep":
		for range sigs {
			fmt.Println("child ignoring SIGTERM")
		}
		return 0
	}
	port, err := strconv.Atoi(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad port:", err)
		return 2
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	status := http.StatusOK
	if args[0] == "unhealthy" {
		status = http.StatusServiceUnavailable
		fmt.Println("loading weights")
	}
	var childPid int
	if args[0] == "stubborn" {
		child := exec.Command(os.Args[0], "sleep")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		childPid = child.Process.Pid
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if status != http.StatusOK {
			fmt.Println("health probed") // tests count the probes in the log
		}
		w.WriteHeader(status)
	})
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%d %d %s %s", os.Getpid(), childPid, os.Getenv("HELPER_ROLE"), os.Getenv("HELPER_INDEX"))
	})
	go func() { _ = http.Serve(ln, mux) }() // ends with the process
	for range sigs {
		if args[0] != "stubborn" {
			fmt.Println("graceful shutdown")
			return 0
		}
		fmt.Println("ignoring SIGTERM")
	}
	return 0
}
