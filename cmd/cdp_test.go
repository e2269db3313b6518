package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// cdpConn speaks the Chrome DevTools Protocol to a chromium started with
// --remote-debugging-pipe: chromium reads commands from its fd 3 and writes
// answers and events to its fd 4, one JSON message per NUL-terminated
// frame. The browser test needs a handful of commands, so this stays in the
// standard library instead of chromedp, whose generated protocol package
// (cdproto, ~70 packages) was the suite's dearest dependency to build: once
// for vet, once more for golangci-lint and again under -race.
type cdpConn struct {
	proc    *exec.Cmd
	stderr  bytes.Buffer // chromium's log, read only after proc.Wait
	w       io.WriteCloser
	onEvent func(method string, params json.RawMessage)
	done    chan struct{} // closed when the reader stops

	mu      sync.Mutex // guards next, pending, readErr and writes to w
	next    int64
	pending map[int64]chan cdpMessage
	readErr error
}

// cdpMessage is every frame either way: a command (ID, Method, Params,
// SessionID), its answer (ID, Result or Error) or an event (Method, Params).
type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startCDP starts chromium with args plus the pipe flag; onEvent sees every
// event, on the reader goroutine, until close returns. Chromium is killed
// when ctx ends, so ctx must outlive the test body (t.Context ends before
// the cleanups that close the browser run).
func startCDP(ctx context.Context, path string, args []string, onEvent func(string, json.RawMessage)) (*cdpConn, error) {
	cmdIn, w, err := os.Pipe() // chromium's fd 3: our commands
	if err != nil {
		return nil, fmt.Errorf("cdp pipe: %w", err)
	}
	r, cmdOut, err := os.Pipe() // chromium's fd 4: its answers and events
	if err != nil {
		cmdIn.Close()
		w.Close()
		return nil, fmt.Errorf("cdp pipe: %w", err)
	}
	c := &cdpConn{w: w, onEvent: onEvent, done: make(chan struct{}), pending: map[int64]chan cdpMessage{}}
	c.proc = exec.CommandContext(ctx, path, append(args, "--remote-debugging-pipe")...)
	c.proc.ExtraFiles = []*os.File{cmdIn, cmdOut}
	c.proc.Stderr = &c.stderr
	c.proc.WaitDelay = 5 * time.Second
	err = c.proc.Start()
	// The child holds its own copies; ours would keep the pipes open after
	// chromium exits, and the reader would never see EOF.
	cmdIn.Close()
	cmdOut.Close()
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("starting chromium: %w", err)
	}
	go c.read(r)
	return c, nil
}

// read delivers answers to their callers and events to onEvent until
// chromium closes its end.
func (c *cdpConn) read(r io.ReadCloser) {
	defer close(c.done)
	defer r.Close()
	br := bufio.NewReader(r)
	var err error
	for {
		var frame []byte
		if frame, err = br.ReadBytes(0); err != nil {
			break
		}
		var m cdpMessage
		if err = json.Unmarshal(frame[:len(frame)-1], &m); err != nil {
			err = fmt.Errorf("cdp frame %.200q: %w", frame, err)
			break
		}
		if m.ID == 0 {
			c.onEvent(m.Method, m.Params)
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	c.mu.Lock()
	c.readErr = fmt.Errorf("chromium closed the devtools pipe: %w", err)
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// call sends one command (to the browser when session is empty, else to
// that page) and decodes its result into out, which may be nil.
func (c *cdpConn) call(ctx context.Context, session, method string, params, out any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s params: %w", method, err)
	}
	ch := make(chan cdpMessage, 1)
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.readErr)
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	frame, err := json.Marshal(cdpMessage{ID: id, Method: method, Params: raw, SessionID: session})
	if err == nil {
		_, err = c.w.Write(append(frame, 0))
	}
	if err != nil {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case m, ok := <-ch:
		switch {
		case !ok:
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Errorf("%s: %w", method, c.readErr)
		case m.Error != nil:
			return fmt.Errorf("%s: %s (code %d)", method, m.Error.Message, m.Error.Code)
		case out == nil:
			return nil
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("%s result: %w", method, err)
		}
		return nil
	}
}

// close asks chromium to quit (killing it if it does not answer), then
// waits for it and for the reader.
func (c *cdpConn) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Chromium may quit before its answer reaches the pipe: an EOF here is
	// the close working.
	callErr := c.call(ctx, "", "Browser.close", struct{}{}, nil)
	if callErr != nil && !errors.Is(callErr, io.EOF) {
		_ = c.proc.Process.Kill()
	}
	c.w.Close()
	waitErr := c.proc.Wait()
	<-c.done
	if waitErr != nil {
		return errors.Join(callErr, waitErr, fmt.Errorf("chromium log: %s", lastBytes(c.stderr.Bytes(), 2000)))
	}
	return nil
}

// lastBytes is the tail of a log, for error messages.
func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
