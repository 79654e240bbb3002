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

// The goroutine, woken by a first line, lingers before it writes, and
// the lines written meanwhile go out with it in one write; a second line
// does not wake it again. Close ends a linger at once and loses nothing.
func TestLinesGatherWhileTheGoroutineLingers(t *testing.T) {
	out := &syncBuffer{gate: make(chan struct{})}
	lingering, wakes := make(chan struct{}), 0
	release := make(chan bool)
	w := start(out, func(quit <-chan struct{}) bool {
		wakes++
		lingering <- struct{}{}
		return <-release
	})
	fmt.Fprintln(w, "first")
	select {
	case <-lingering:
	case <-time.After(10 * time.Second):
		t.Fatal("the first line did not wake the goroutine")
	}
	for i := range 99 {
		fmt.Fprintln(w, "more", i)
	}
	if out.writes != 0 {
		t.Fatalf("%d writes before the linger ended", out.writes)
	}
	release <- true
	out.gate <- struct{}{}   // it writes what it took
	fmt.Fprintln(w, "after") // a line in the empty buffer wakes it again
	select {
	case <-lingering:
	case <-time.After(10 * time.Second):
		t.Fatal("a line after the write did not wake the goroutine")
	}
	release <- false // as if Close were called while it lingers
	out.gate <- struct{}{}
	<-w.done
	if n := strings.Count(out.String(), "\n"); n != 101 {
		t.Fatalf("%d lines out, want 101", n)
	}
	if out.writes != 2 || wakes != 2 {
		t.Fatalf("%d writes and %d wakes for 101 lines; want 2 and 2", out.writes, wakes)
	}
}

// Close does not wait out the linger.
func TestCloseEndsTheLinger(t *testing.T) {
	out := &syncBuffer{}
	w := New(out)
	fmt.Fprintln(w, "line")
	closed := make(chan error)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil || out.String() != "line\n" {
			t.Fatalf("Close = %v, out %q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
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
