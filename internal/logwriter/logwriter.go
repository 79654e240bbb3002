// Package logwriter takes the log's writes off the request path: a [Writer]
// gathers lines in memory and writes them a few milliseconds later, so that
// under load one write system call carries many lines instead of one each.
package logwriter

import (
	"io"
	"sync"
	"time"
)

// linger is how long a line waits for others before they are written:
// a line reaches the output at most this late.
const linger = 2 * time.Millisecond

// maxBuffered bounds the memory held when the output is slower than the
// log: past it, a Write writes what has gathered itself.
const maxBuffered = 1 << 20

// A Writer buffers what is written to it and writes it to its output in
// order, linger after the first line of a batch. Nothing is dropped. Call
// Close before the process exits; a Write after it goes straight out.
type Writer struct {
	out     sync.Mutex // held while writing to w.w, so batches keep their order
	w       io.Writer
	mu      sync.Mutex // guards the fields below
	buf     []byte
	spare   []byte
	pending bool // a flush is scheduled
	closed  bool
}

// New returns a Writer to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write appends p to the buffer; it returns before p reaches the output.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf = append(w.buf, p...)
	now := w.closed || len(w.buf) > maxBuffered
	if !now && !w.pending {
		w.pending = true
		time.AfterFunc(linger, func() { w.flush() })
	}
	w.mu.Unlock()
	if now {
		return len(p), w.flush()
	}
	return len(p), nil
}

// flush writes what has gathered.
func (w *Writer) flush() error {
	w.out.Lock()
	defer w.out.Unlock()
	w.mu.Lock()
	b := w.buf
	w.buf, w.spare = w.spare[:0], nil
	w.pending = false
	w.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	_, err := w.w.Write(b)
	if cap(b) <= maxBuffered { // a burst's buffer is not kept
		w.mu.Lock()
		w.spare = b
		w.mu.Unlock()
	}
	return err
}

// Close writes what is buffered; later writes go straight to the output.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return w.flush()
}
