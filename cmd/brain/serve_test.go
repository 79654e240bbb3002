package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// startServe runs serveUntilDone with handler h and returns the address,
// the cancel that starts the shutdown, and the channel serveUntilDone's
// result arrives on.
func startServe(t *testing.T, h http.Handler, drain time.Duration) (string, context.CancelFunc, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		srv := &http.Server{Handler: h}
		done <- serveUntilDone(ctx, srv, func() error { return srv.Serve(ln) }, drain, slog.New(slog.DiscardHandler),
			func(context.Context) error { return nil })
	}()
	return "http://" + ln.Addr().String(), cancel, done
}

func TestShutdownDrainsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	base, cancel, done := startServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	}), 10*time.Second)

	result := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/slow")
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		result <- string(b)
	}()
	<-entered
	cancel() // shutdown begins with the request in flight

	// New connections are refused once the listener is closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", base[len("http://"):], time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections during shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("serveUntilDone returned (%v) before the in-flight request finished", err)
	default:
	}
	close(release)
	if got := <-result; got != "finished" {
		t.Fatalf("in-flight request got %q, want it served to the end", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("serveUntilDone = %v, want nil", err)
	}
}

func TestShutdownGivesUpAfterDrain(t *testing.T) {
	entered := make(chan struct{})
	base, cancel, done := startServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done() // never finishes on its own
	}), 50*time.Millisecond)
	go http.Get(base + "/stuck")
	<-entered
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveUntilDone = %v, want nil: a signalled shutdown exits cleanly", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveUntilDone still waits long after the drain timeout")
	}
}
