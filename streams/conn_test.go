// Tests of the SSE transport: the message format, the takeover of the
// connection, the fallback through the ResponseWriter, the stalled-client
// check, and the pump loop.

package streams_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/streams"
)

func TestAppendEventFormat(t *testing.T) {
	got, err := streams.AppendEvent(nil, "1-2", "apikey.created", json.RawMessage(`{"id":"k"}`))
	if err != nil || string(got) != "id: 1-2\nevent: apikey.created\ndata: {\"id\":\"k\"}\n\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, _ = streams.AppendEvent([]byte(":\n\n"), "", "system.live", json.RawMessage("{\n \"a\": 1\r\n}"))
	if string(got) != ":\n\nevent: system.live\ndata: {\"a\":1}\n\n" { // no id line; the data compacted onto one line
		t.Fatalf("got %q", got)
	}
	if _, err := streams.AppendEvent(nil, "", "x", json.RawMessage("{\nnot json")); !errors.Is(err, streams.ErrNotJSON) {
		t.Fatalf("data that is not JSON: %v, want ErrNotJSON", err)
	}
}

// serveConn serves one stream whose handler starts a Conn and writes
// what it is given, and returns the raw connection to it after the
// request, and what the handler saw.
func serveConn(t *testing.T, msgs ...string) (c net.Conn, tookOver <-chan bool, gone <-chan struct{}) {
	t.Helper()
	took, left := make(chan bool, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := streams.NewConn(w, time.Minute)
		took1 := false
		if err := sc.Start(3*time.Second, func() { took1 = true }, func() { close(left) }); err != nil {
			t.Error(err)
		}
		took <- took1 && sc.TookOver()
		go func() { // the handler returns; the stream lives on
			for _, m := range msgs {
				_ = sc.Write([]byte(m))
			}
			<-left
			sc.Close()
		}()
	}))
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c, took, left
}

func TestConnTakesTheConnectionOver(t *testing.T) {
	c, took, gone := serveConn(t, ":\n\n", "event: e\ndata: 1\n\n")
	if !<-took {
		t.Fatal("Start did not take the HTTP/1.1 connection over")
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if !resp.Close || resp.ContentLength != -1 {
		t.Errorf("Connection: close %v, Content-Length %d; want a body that ends with the connection", resp.Close, resp.ContentLength)
	}
	want := "retry: 3000\n\n:\n\nevent: e\ndata: 1\n\n"
	body := make([]byte, len(want))
	if _, err := io.ReadFull(resp.Body, body); err != nil || string(body) != want {
		t.Fatalf("body %q, %v; want %q", body, err, want)
	}
	c.Close()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("gone was not called when the client closed the connection")
	}
}

func TestConnCutsOffAFloodingClient(t *testing.T) {
	c, took, gone := serveConn(t)
	<-took
	if _, err := c.Write(make([]byte, streams.MaxClientInput+1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("a client that sent more than MaxClientInput was not cut off")
	}
}

func TestConnWithoutTakeover(t *testing.T) {
	rec := httptest.NewRecorder() // cannot be hijacked: the stream goes through it
	sc := streams.NewConn(rec, time.Minute)
	if err := sc.Start(time.Second, func() { t.Error("tookOver called") }, func() { t.Error("gone called") }); err != nil {
		t.Fatal(err)
	}
	if err := sc.Beat(); err != nil {
		t.Fatal(err)
	}
	if sc.TookOver() || sc.Close() {
		t.Error("a stream through the ResponseWriter reports a connection taken over")
	}
	if rec.Code != 200 || !rec.Flushed || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("status %d, flushed %v, headers %v", rec.Code, rec.Flushed, rec.Header())
	}
	if got := rec.Body.String(); got != "retry: 1000\n\n:\n\n" || sc.Written() != int64(len(got)) {
		t.Errorf("body %q, written %d", got, sc.Written())
	}
	if sc.Stalled() {
		t.Error("Stalled without a connection to ask the kernel about")
	}
}

func TestConnHead(t *testing.T) {
	rec := httptest.NewRecorder()
	streams.NewConn(rec, time.Minute).Head()
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("status %d, body %q, headers %v", rec.Code, rec.Body, rec.Header())
	}
}

// A client that stops reading is stalled once the kernel has held the
// same unsent bytes for two checks in a row.
func TestConnStalled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel tells unsent bytes on Linux only")
	}
	stalled := make(chan []bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc := streams.NewConn(w, 50*time.Millisecond) // writes give up after 100 ms
		if err := sc.Start(time.Second, func() {}, func() {}); err != nil {
			t.Error(err)
		}
		chunk := []byte(strings.Repeat("data: x\n\n", 1<<12))
		for sc.Write(chunk) == nil { // until the client's window and the kernel's buffers are full
		}
		stalled <- []bool{sc.Stalled(), sc.Stalled(), sc.Stalled()}
		sc.Close()
	}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing.
	select {
	case got := <-stalled:
		if got[0] || got[1] || !got[2] {
			t.Fatalf("Stalled at three checks: %v, want false, false, true", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writes to a client that reads nothing never failed their deadline")
	}
}

func TestLoop(t *testing.T) {
	source, closing, probe := make(chan int), make(chan struct{}), make(chan struct{})
	var got []int
	var beats, pings int
	shut := false
	done, beaten := make(chan struct{}), make(chan struct{}, 1)
	go func() {
		defer close(done)
		streams.Loop(context.Background(), time.Millisecond, closing, probe, source,
			func(v int, ok bool) error { got = append(got, v); return nil },
			func() error {
				beats++
				select {
				case beaten <- struct{}{}:
				default:
				}
				return nil
			}, func() error { pings++; return nil }, func() { shut = true })
	}()
	source <- 1
	probe <- struct{}{}
	source <- 2
	<-beaten // a heartbeat
	close(closing)
	<-done
	if len(got) != 2 || got[1] != 2 || beats == 0 || pings != 1 || !shut {
		t.Fatalf("sent %v, beats %d, pings %d, shutdown %v", got, beats, pings, shut)
	}

	// A send or a ping that fails ends the loop; so does the context.
	errEnd := errors.New("end")
	streams.Loop(context.Background(), time.Hour, nil, nil, closedChan(), func(int, bool) error { return errEnd }, nil, nil, nil)
	probed := make(chan struct{}, 1)
	probed <- struct{}{}
	streams.Loop(context.Background(), time.Hour, nil, probed, make(chan int), nil, nil, func() error { return errEnd }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	streams.Loop(ctx, time.Hour, nil, nil, make(chan int), nil, nil, nil, nil)
}

func closedChan() chan int { c := make(chan int); close(c); return c }
