// This file holds what the middleware tests share: a request through a
// chain, and a logger into a buffer.

package middleware_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// serve runs req through h and returns the recorded response.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// logBuffer is a concurrency-safe buffer a text logger writes to.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// line returns the first logged line holding msg=<msg>, or "".
func (b *logBuffer) line(msg string) string {
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "msg="+msg) {
			return l
		}
	}
	return ""
}

// newLogger returns a logger writing text lines to a new buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
