package logwriter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is an output safe for the test to read while the writer's
// goroutine writes, counting the writes it gets.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	gate   chan struct{} // when not nil, each write waits for a receive
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Every line written by many goroutines reaches the output once, whole,
// and each goroutine's lines in the order it wrote them; Close leaves
// nothing behind.
func TestEveryLineInOrder(t *testing.T) {
	out := &syncBuffer{}
	w := New(out)
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(w, "g%d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range got {
		var g, i int
		if _, err := fmt.Sscanf(l, "g%d line %d", &g, &i); err != nil {
			t.Fatalf("a torn line %q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if len(got) != writers*lines {
		t.Fatalf("%d lines, want %d", len(got), writers*lines)
	}
}

// While the output is busy, lines gather and go out together: far fewer
// writes reach it than lines.
func TestLinesGatherWhileTheOutputIsBusy(t *testing.T) {
	out := &syncBuffer{gate: make(chan struct{})}
	w := New(out)
	fmt.Fprintln(w, "first") // the goroutine takes it and waits at the gate
	for i := range 100 {
		fmt.Fprintln(w, "more", i)
	}
	close(out.gate) // every write may go now
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 101 {
		t.Fatalf("%d lines out, want 101", n)
	}
	if out.writes > 3 {
		t.Fatalf("%d writes for 101 lines written while the output was busy; want them gathered", out.writes)
	}
}

// Past maxBuffered, Write waits for the goroutine instead of growing the
// buffer without bound; nothing is dropped. While the output is held, a
// writer of twice maxBuffered cannot finish; once it is let go, it does.
func TestWriteWaitsWhenTheBufferIsFull(t *testing.T) {
	out := &syncBuffer{gate: make(chan struct{})}
	w := New(out)
	fmt.Fprintln(w, "first") // the goroutine takes it and waits at the gate
	line := bytes.Repeat([]byte("x"), 64<<10)
	n := 2 * maxBuffered / len(line)
	wrote := make(chan struct{})
	go func() {
		for range n {
			w.Write(line)
		}
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatalf("%d bytes written while the output was held: Write did not wait at %d", n*len(line), maxBuffered)
	case <-time.After(200 * time.Millisecond): // the failure is quick; a pass waits this long
	}
	w.mu.Lock()
	held := len(w.buf)
	w.mu.Unlock()
	if held > maxBuffered || held < maxBuffered-len(line) {
		t.Fatalf("the buffer holds %d bytes while Write waits; want the most that fits in %d", held, maxBuffered)
	}
	close(out.gate) // every write may go now
	<-wrote
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := len(out.String()), len("first\n")+n*len(line); got != want {
		t.Fatalf("%d bytes out, want %d", got, want)
	}
}

// After Close a Write goes straight to the output, and the output's
// first error is reported.
func TestAfterCloseAndErrors(t *testing.T) {
	out := &syncBuffer{}
	w := New(out)
	w.Close()
	fmt.Fprintln(w, "late")
	if out.String() != "late\n" {
		t.Fatalf("after Close: %q", out.String())
	}
	if err := w.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}

	broken := errors.New("disk full")
	w = New(failing{broken})
	fmt.Fprintln(w, "lost")
	if err := w.Close(); !errors.Is(err, broken) {
		t.Fatalf("Close = %v, want the output's error", err)
	}
}

type failing struct{ err error }

func (f failing) Write([]byte) (int, error) { return 0, f.err }
