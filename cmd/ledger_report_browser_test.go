package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is one headless Chromium page for a test, with everything the
// page logs as an error or warning and every URL it requests.
type browser struct {
	ctx     context.Context
	conn    *cdpConn
	session string // the page's devtools session

	mu       sync.Mutex
	errors   []string
	requests []string
}

// newBrowser starts Debian's chromium headless with the network-quiet flags
// this machine needs (no background connections, no component updates) and
// a fresh profile, and opens one page; without chromium the test skips.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, lookErr := exec.LookPath("chromium")
	if lookErr != nil {
		t.Skip("chromium is not installed (make test installs Debian's chromium package): skipping the browser test")
	}
	// Not t.Context: that ends before the cleanup below closes chromium.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := &browser{ctx: ctx}
	conn, err := startCDP(ctx, path, []string{
		"--headless", "--hide-scrollbars", "--mute-audio", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1440,1000",
	}, b.event)
	if err != nil {
		t.Fatal(err)
	}
	b.conn = conn
	t.Cleanup(func() {
		if err := conn.close(ctx); err != nil {
			t.Errorf("closing chromium: %v", err)
		}
	})
	var created struct {
		TargetID string `json:"targetId"`
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := conn.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if err := conn.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatalf("attaching to the page: %v", err)
	}
	b.session = attached.SessionID
	// Every domain whose events the test reads, before any page loads.
	for _, domain := range []string{"Runtime", "Log", "Network", "Page"} {
		if err := conn.call(ctx, b.session, domain+".enable", struct{}{}, nil); err != nil {
			t.Fatalf("listening to chromium: %v", err)
		}
	}
	return b
}

// event records the page's errors, warnings and requests.
func (b *browser) event(method string, params json.RawMessage) {
	var ev struct {
		Type string `json:"type"` // Runtime.consoleAPICalled
		Args []struct {
			Value       json.RawMessage `json:"value"`
			Description string          `json:"description"`
		} `json:"args"`
		ExceptionDetails struct { // Runtime.exceptionThrown
			Text       string `json:"text"`
			URL        string `json:"url"`
			LineNumber int    `json:"lineNumber"`
			Exception  *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
		Entry struct { // Log.entryAdded
			Level, Source, Text, URL string
		} `json:"entry"`
		Request struct { // Network.requestWillBeSent
			URL string `json:"url"`
		} `json:"request"`
	}
	if err := json.Unmarshal(params, &ev); err != nil {
		ev.Type, method = "error", "Runtime.consoleAPICalled"
		ev.Args = append(ev.Args[:0], struct {
			Value       json.RawMessage `json:"value"`
			Description string          `json:"description"`
		}{Description: fmt.Sprintf("undecodable %s event: %v", method, err)})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch method {
	case "Runtime.consoleAPICalled":
		if ev.Type == "error" || ev.Type == "assert" || ev.Type == "warning" {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.errors = append(b.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case "Runtime.exceptionThrown":
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errors = append(b.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case "Log.entryAdded":
		if e := ev.Entry; e.Level == "error" || e.Level == "warning" {
			b.errors = append(b.errors, fmt.Sprintf("browser log %s (%s): %s %s", e.Level, e.Source, e.Text, e.URL))
		}
	case "Network.requestWillBeSent":
		b.requests = append(b.requests, ev.Request.URL)
	}
}

// open loads a local file and waits until the page script finished: the
// page marks its body data-rendered when every section is drawn.
func (b *browser) open(t *testing.T, file string) {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	if err := b.conn.call(b.ctx, b.session, "Page.navigate", map[string]any{"url": u}, nil); err != nil {
		t.Fatalf("opening %s: %v", file, err)
	}
	ready := fmt.Sprintf(`location.href === %q && document.body !== null && document.body.dataset.rendered === "true"`, u)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var done bool
		if err := b.evaluate(ready, &done); err != nil {
			t.Fatalf("opening %s: %v (page errors: %v)", file, err, b.pageErrors())
		}
		if done {
			return
		}
		select {
		case <-b.ctx.Done():
			t.Fatalf("opening %s: the page never rendered (page errors: %v)", file, b.pageErrors())
		case <-tick.C:
		}
	}
}

// evaluate runs a script in the page, awaiting a promise it returns, and
// decodes its JSON result into out.
func (b *browser) evaluate(js string, out any) error {
	var res struct {
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := b.conn.call(b.ctx, b.session, "Runtime.evaluate", map[string]any{"expression": js, "returnByValue": true, "awaitPromise": true}, &res)
	switch {
	case err != nil:
		return err
	case res.ExceptionDetails != nil:
		msg := res.ExceptionDetails.Text
		if e := res.ExceptionDetails.Exception; e != nil {
			msg += " " + e.Description
		}
		return fmt.Errorf("script threw: %s", msg)
	case res.Result.Value == nil:
		return fmt.Errorf("script returned %s, not a JSON value", res.Result.Type)
	}
	return json.Unmarshal(res.Result.Value, out)
}

// eval runs a script in the page and decodes its JSON result into out.
func (b *browser) eval(t *testing.T, js string, out any) {
	t.Helper()
	if err := b.evaluate(js, out); err != nil {
		t.Fatalf("evaluating %q: %v", js, err)
	}
}

// click clicks an element with the mouse: scrolled into view, then a left
// button press and release at its centre, as a user would.
func (b *browser) click(t *testing.T, selector string) {
	t.Helper()
	var at [2]float64
	b.eval(t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: "center", inline: "center"});
	  const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, selector), &at)
	for _, kind := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		ev := map[string]any{"type": kind, "x": at[0], "y": at[1], "button": "left", "clickCount": 1}
		if err := b.conn.call(b.ctx, b.session, "Input.dispatchMouseEvent", ev, nil); err != nil {
			t.Fatalf("clicking %s: %v", selector, err)
		}
	}
}

func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// offline lists every request that left the file itself: the report must
// need no network, so there should be none.
func (b *browser) offline(file string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, u := range b.requests {
		if !strings.HasPrefix(u, "file://") || !strings.HasSuffix(u, filepath.Base(file)) {
			out = append(out, u)
		}
	}
	return out
}

// screenshot saves the whole page, beyond the window, as a PNG.
func (b *browser) screenshot(t *testing.T, path string) {
	t.Helper()
	var shot struct {
		Data []byte `json:"data"` // base64 in the protocol, decoded by encoding/json
	}
	params := map[string]any{"format": "png", "captureBeyondViewport": true, "fromSurface": true}
	if err := b.conn.call(b.ctx, b.session, "Page.captureScreenshot", params, &shot); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		t.Fatal(err)
	}
}
