package logwriter

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// output records each write to it, and signals each.
type output struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	wrote  chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writes++
	select {
	case o.wrote <- struct{}{}:
	default:
	}
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Lines written at once from many goroutines all arrive, each whole and in
// each writer's order, in far fewer writes than lines; Close writes what
// is left and a write after it goes straight out.
func TestWriter(t *testing.T) {
	out := &output{wrote: make(chan struct{}, 1)}
	w := New(out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(w, "g%d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines {
		var g string
		var i int
		if _, err := fmt.Sscanf(l, "%s line %d", &g, &i); err != nil || i != next[g] {
			t.Fatalf("line %q out of order or torn (next of %s is %d)", l, g, next[g])
		}
		next[g]++
	}
	if len(lines) != 8*500 {
		t.Fatalf("%d lines arrived, want %d", len(lines), 8*500)
	}
	if out.writes >= len(lines)/2 {
		t.Errorf("%d writes for %d lines: the lines were not gathered", out.writes, len(lines))
	}

	before := out.writes
	fmt.Fprintf(w, "after close\n")
	if out.writes != before+1 || !strings.HasSuffix(out.String(), "after close\n") {
		t.Fatalf("a write after Close did not go straight out")
	}
}

// A line reaches the output by itself, without Close; a burst past the
// buffer's bound is written by the writer that overflows it.
func TestWriterFlushesAlone(t *testing.T) {
	out := &output{wrote: make(chan struct{}, 1)}
	w := New(out)
	defer w.Close()
	w.Write([]byte("one\n"))
	select {
	case <-out.wrote:
	case <-time.After(time.Minute):
		t.Fatal("a line was not written within a minute")
	}
	if out.String() != "one\n" {
		t.Fatalf("output %q", out.String())
	}

	big := bytes.Repeat([]byte("x"), maxBuffered)
	w.Write(big)
	w.Write([]byte("\n"))
	if got := len(out.String()); got < maxBuffered {
		t.Fatalf("after a write past the bound, %d bytes were out, want the burst", got)
	}
}
