package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// Differential tests of the client side: the Transport and net/http's
// Transport are fed the same worker byte streams and must hand each caller
// the same thing. Each runs in its own synctest bubble over in-memory
// connections, and the bubble settles (synctest.Wait) after every request,
// so what a transport does with bytes that arrive while a connection is
// idle is done before the next request goes out: the outcome does not
// depend on timing.

// scriptItem is one answer of a worker's script.
type scriptItem struct {
	now   string // written as soon as the request was read
	later string // written separately, once the client read all of now
	close bool   // the worker closes the connection after it
}

// scriptWorker answers the requests it reads on any connection with the
// next item of its script, in order; once the script is used up, with
// usedUp.
type scriptWorker struct {
	script []scriptItem

	mu       sync.Mutex
	next     int
	received int
	answered map[int]int // caller's request number → script item it got last
	conns    []net.Conn  // the worker's ends
	wg       sync.WaitGroup
}

func (w *scriptWorker) DialContext(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	w.mu.Lock()
	w.conns = append(w.conns, server)
	w.mu.Unlock()
	w.wg.Go(func() { w.serve(server) })
	return client, nil
}

func (w *scriptWorker) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		var n int
		_, _ = fmt.Sscanf(string(body), `{"n":%d}`, &n)
		w.mu.Lock()
		w.received++
		i := w.next
		if i < len(w.script) {
			w.next++
			if w.answered == nil {
				w.answered = map[int]int{}
			}
			w.answered[n] = i
		}
		w.mu.Unlock()
		if i == len(w.script) {
			_, _ = io.WriteString(c, usedUp)
			return
		}
		it := w.script[i]
		if _, err := io.WriteString(c, it.now); err != nil {
			return
		}
		if it.later != "" {
			if _, err := io.WriteString(c, it.later); err != nil {
				return
			}
		}
		if it.close {
			return
		}
	}
}

// usedUp is the answer to requests after the script's last.
const usedUp = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 7\r\n\r\nused up"

// hangUp closes every connection from the worker's end: what a worker that
// has nothing more to send does at last.
func (w *scriptWorker) hangUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		_ = c.Close()
	}
}

// outcome is what a caller received for one request.
type outcome struct {
	status  int // 0: the round trip failed
	body    string
	bodyErr bool // reading the body failed (after body's bytes)
	// hungUp: the answer only ended when the worker hung up. Not part of
	// what the caller receives, only of when: net/http refuses a
	// malformed status line as soon as it is read, h1 once the whole head
	// is (a worker that sends half a head then waits gets its answer
	// refused when it closes, or the router's request timeout ends it).
	hungUp bool
	item   int // the script item the worker answered it with (-1: none)
}

// received is what the caller got, whenever it got it.
func (o outcome) received() outcome { o.hungUp = false; return o }

func (o outcome) String() string {
	s := fmt.Sprintf("%d %q", o.status, o.body)
	if o.bodyErr {
		s += " +body error"
	}
	if o.hungUp {
		s += " (ended by the worker hanging up)"
	}
	return s
}

// run is what callers of rt receive for requests sent one after another
// to w, and how many requests w received. Call it inside a synctest
// bubble.
func run(rt http.RoundTripper, w *scriptWorker, requests int) ([]outcome, int) {
	var outs []outcome
	for i := range requests {
		done := make(chan outcome, 1)
		go func() { done <- roundTripOnce(rt, i) }()
		var o outcome
		for hungUp := false; ; hungUp = true {
			synctest.Wait()
			select {
			case o = <-done:
				o.hungUp = hungUp
			default:
				// Waiting for bytes the worker will never send (again,
				// if the request went out anew when it hung up before).
				w.hangUp()
				continue
			}
			break
		}
		w.mu.Lock()
		o.item = -1
		if item, ok := w.answered[i]; ok {
			o.item = item
		}
		w.mu.Unlock()
		outs = append(outs, o)
		synctest.Wait() // what the transport does with an idle connection is done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return outs, w.received
}

func roundTripOnce(rt http.RoundTripper, i int) outcome {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://worker:80/v1/completions",
		strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
	// net/http sends a POST again on a fresh connection, as h1 does with
	// every request whose body it can replay, only when it says it may.
	req.Header.Set("Idempotency-Key", fmt.Sprint(i))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return outcome{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return outcome{status: resp.StatusCode, body: string(b), bodyErr: err != nil}
}

// differential plays script to h1's Transport and to net/http's, each in a
// bubble of its own, and returns what each caller received and how many
// requests each worker received.
func differential(t *testing.T, script []scriptItem, requests int) (ours, std []outcome, oursN, stdN int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		w := &scriptWorker{script: script}
		tr := New(Options{Dial: w, Fallback: &http.Transport{}, MaxIdlePerHost: 4})
		ours, oursN = run(tr, w, requests)
		tr.CloseIdleConnections()
		w.hangUp()
		w.wg.Wait()
	})
	synctest.Test(t, func(t *testing.T) {
		w := &scriptWorker{script: script}
		tr := &http.Transport{DialContext: w.DialContext, DisableCompression: true, MaxIdleConnsPerHost: 4}
		std, stdN = run(tr, w, requests)
		tr.CloseIdleConnections()
		w.hangUp()
		w.wg.Wait()
	})
	return ours, std, oursN, stdN
}

// checkAgreement fails unless both transports handed every caller the
// same answer and sent the worker as many requests. One difference is
// allowed: h1 refuses an answer net/http delivers when h1's parser
// refuses that answer on its own (a status below 100 or with two spaces
// before it, HTTP/0.x, a folded field line, a trailer line with a bare
// LF: FuzzReadResponse holds the head parser to net/http's on everything
// else). h1 then closes a connection net/http may reuse, so what later
// callers get may differ too, and the comparison ends there.
func checkAgreement(t *testing.T, script []scriptItem, requests int) []outcome {
	t.Helper()
	ours, std, oursN, stdN := differential(t, script, requests)
	same := true
	for i, a := range ours {
		b := std[i]
		if a.received() == b.received() {
			continue
		}
		// h1 refused the head, or the body's trailer.
		refused := a.status == 0 || (a.status == b.status && a.bodyErr && !b.bodyErr)
		if refused && a.item >= 0 && a.item == b.item && h1Refuses(script[a.item].now) {
			oursN, stdN = 0, 0
			break
		}
		same = false
		break
	}
	if !same || oursN != stdN {
		var b strings.Builder
		for i := range ours {
			fmt.Fprintf(&b, "\n  request %d: h1 %v\n             net/http %v", i, ours[i], std[i])
		}
		t.Fatalf("h1 and net/http disagree on script %+v (worker received %d and %d requests):%s", script, oursN, stdN, b.String())
	}
	return ours
}

// h1Refuses reports whether h1 reads answer, alone, as a malformed head
// (skipping informational answers before it, as a round trip does), or a
// chunked body with a trailer line that ends in a bare LF (net/http reads
// such a line when a CRLF CRLF follows somewhere; h1 never does).
func h1Refuses(answer string) bool {
	c := &conn{br: bufio.NewReader(strings.NewReader(answer))}
	for {
		a, err := c.readReply(&http.Request{Method: http.MethodPost})
		if err != nil {
			return true
		}
		if code := a.resp.StatusCode; code >= 200 || code == http.StatusSwitchingProtocols {
			_, err := io.ReadAll(a.resp.Body)
			return errors.Is(err, errBareLF)
		}
	}
}

// quietNetHTTPLog silences net/http's log line about unsolicited answers,
// which the tests provoke on purpose, for the test's duration.
func quietNetHTTPLog(t testing.TB) {
	prev := log.Writer()
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(prev) })
}

// diffCases are the byte streams issue 34 names: unsolicited answers,
// duplicate lengths, early close, trailing bytes, 1xx and chunked edge
// cases. want is what the callers receive, in order (the transports must
// also agree with each other).
var diffCases = []struct {
	name   string
	script []scriptItem
	want   []string // each caller's outcome (outcome.String)
}{
	{"kept alive", []scriptItem{{now: okAnswer("a")}, {now: okAnswer("b")}}, []string{`200 "a"`, `200 "b"`}},
	{"unsolicited answer while idle", []scriptItem{{now: okAnswer("a"), later: okAnswer("unasked")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"unsolicited answer with the answer", []scriptItem{{now: okAnswer("a") + okAnswer("unasked")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"unsolicited 408 while idle", []scriptItem{{now: okAnswer("a"), later: "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"trailing bytes", []scriptItem{{now: okAnswer("a") + "garbage"}, {now: okAnswer("b")}}, []string{`200 "a"`, `200 "b"`}},
	{"same length twice", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na"}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"two different lengths", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"}, {now: okAnswer("b")}},
		[]string{`0 ""`, `200 "b"`}},
	{"length and chunked", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"}, {now: okAnswer("b")}},
		nil},
	{"closed mid-body", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", close: true}, {now: okAnswer("b")}},
		[]string{`200 "abc" +body error`, `200 "b"`}},
	{"closed after the head", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", close: true}, {now: okAnswer("b")}},
		[]string{`200 "" +body error`, `200 "b"`}},
	{"closed without an answer", []scriptItem{{close: true}, {now: okAnswer("b")}}, []string{`0 ""`, `200 "b"`}},
	{"closed after a kept-alive answer", []scriptItem{{now: okAnswer("a"), close: true}, {now: okAnswer("b")}, {now: okAnswer("c")}},
		[]string{`200 "a"`, `200 "b"`, `200 "c"`}},
	{"half an answer, then silence", []scriptItem{{now: "HTTP/1.1 200 OK\r\nContent-Len"}, {now: okAnswer("b")}},
		[]string{`0 "" (ended by the worker hanging up)`, `200 "b"`}},
	{"body until close", []scriptItem{{now: "HTTP/1.1 200 OK\r\n\r\nuntil close", close: true}, {now: okAnswer("b")}},
		[]string{`200 "until close"`, `200 "b"`}},
	{"http/1.0 answer", []scriptItem{{now: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na"}, {now: okAnswer("b")}}, []string{`200 "a"`, `200 "b"`}},
	{"connection close", []scriptItem{{now: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na" + okAnswer("unasked")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"100 and 103 before the answer", []scriptItem{{now: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + okAnswer("a")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"six 1xx", []scriptItem{{now: strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + okAnswer("a")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"204 with a body", []scriptItem{{now: "HTTP/1.1 204 No Content\r\n\r\nunasked"}, {now: okAnswer("b")}}, []string{`204 ""`, `200 "b"`}},
	{"chunked", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nab\r\n1\r\nc\r\n0\r\nX-Trailer: t\r\n\r\n"}, {now: okAnswer("b")}},
		[]string{`200 "abc"`, `200 "b"`}},
	{"chunked, then unasked", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", later: okAnswer("unasked")}, {now: okAnswer("b")}},
		[]string{`200 "a"`, `200 "b"`}},
	{"chunk size overflow", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\na\r\n0\r\n\r\n"}, {now: okAnswer("b")}},
		[]string{`200 "" +body error`, `200 "b"`}},
	{"chunk line with a bare LF", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n"}, {now: okAnswer("b")}},
		[]string{`200 "" +body error`, `200 "b"`}},
	{"chunk longer than its size", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n"}, {now: okAnswer("b")}},
		[]string{`200 "a" +body error`, `200 "b"`}},
	{"chunked without its last chunk", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n", close: true}, {now: okAnswer("b")}},
		[]string{`200 "a" +body error`, `200 "b"`}},
	{"gzip transfer coding", []scriptItem{{now: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx"}, {now: okAnswer("b")}},
		[]string{`0 ""`, `200 "b"`}},
	{"script used up", []scriptItem{{now: okAnswer("a")}}, []string{`200 "a"`, `503 "used up"`}},
}

func TestTransportAgreesWithNetHTTP(t *testing.T) {
	quietNetHTTPLog(t)
	for _, c := range diffCases {
		t.Run(c.name, func(t *testing.T) {
			got := checkAgreement(t, c.script, len(c.script)+1)
			if c.want == nil {
				return
			}
			for i, w := range c.want {
				if got[i].String() != w {
					t.Errorf("request %d received %v, want %s", i, got[i], w)
				}
			}
		})
	}
}

// Script encoding for the fuzz target: items separated by 0xff; an item's
// first byte holds its flags (bit 0: close after it), and a 0xfe splits its
// bytes into now and later.
const (
	itemSep  = "\xff"
	laterSep = "\xfe"
)

func encodeScript(items []scriptItem) []byte {
	var b bytes.Buffer
	for i, it := range items {
		if i > 0 {
			b.WriteString(itemSep)
		}
		flags := byte(0)
		if it.close {
			flags |= 1
		}
		b.WriteByte(flags)
		b.WriteString(it.now)
		if it.later != "" {
			b.WriteString(laterSep + it.later)
		}
	}
	return b.Bytes()
}

// maxScriptItems bounds a fuzzed script (and so the requests of a run).
const maxScriptItems = 6

func decodeScript(data []byte) []scriptItem {
	var items []scriptItem
	for part := range strings.SplitSeq(string(data), itemSep) {
		if len(items) == maxScriptItems {
			break
		}
		it := scriptItem{}
		if part != "" {
			it.close = part[0]&1 != 0
			part = part[1:]
		}
		it.now, it.later, _ = strings.Cut(part, laterSep)
		items = append(items, it)
	}
	return items
}

// FuzzTransportAgreesWithNetHTTP plays any worker script to h1's Transport
// and to net/http's: every caller must receive the same answer (status,
// body, body error) from both, and the worker as many requests. Its seed
// corpus is diffCases.
//
//	go test -run '^$' -fuzz FuzzTransportAgreesWithNetHTTP ./router/h1/
func FuzzTransportAgreesWithNetHTTP(f *testing.F) {
	quietNetHTTPLog(f)
	for _, c := range diffCases {
		f.Add(encodeScript(c.script))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		script := decodeScript(data)
		checkAgreement(t, script, len(script)+1)
	})
}
