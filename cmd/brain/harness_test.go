package main

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// tbRecorder is a testing.TB that records what a test helper reports,
// for tests of the helpers themselves. Fatal ends the helper's goroutine,
// as it ends a test's; cleanups run when runCleanups is called.
type tbRecorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *tbRecorder) Helper() {}

func (r *tbRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *tbRecorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *tbRecorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *tbRecorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *tbRecorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *tbRecorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A server that cannot start is reported at once, with its output, and
// once: the harness neither waits out a timeout nor adds an error of its
// own when it stops what never ran.
func TestHarnessReportsAFailedStartOnce(t *testing.T) {
	for _, h := range []struct {
		name  string
		start func(testing.TB, map[string]string)
	}{
		{"runServer", func(tb testing.TB, kv map[string]string) { runServer(tb, kv) }},
		{"startProc", func(tb testing.TB, kv map[string]string) { startProc(tb, kv) }},
	} {
		t.Run(h.name, func(t *testing.T) {
			rec := &tbRecorder{TB: t}
			began := time.Now()
			started := make(chan struct{})
			go func() {
				defer close(started)
				h.start(rec, map[string]string{"BRAIN_RATE_LIMIT_IP": "lots"})
			}()
			<-started
			rec.runCleanups()
			if took := time.Since(began); took >= serverStart/2 { // not by the wait for a start
				t.Errorf("the failed start-up was reported after %v, want at once (well within %v)", took, serverStart)
			}
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], `invalid BRAIN_RATE_LIMIT_IP="lots"`) {
				t.Fatalf("reported %d error(s): %q; want one naming BRAIN_RATE_LIMIT_IP", len(rec.errs), rec.errs)
			}
		})
	}
}
