// Package logwriter takes the log's writes off the request path: a
// [Writer] appends each line to a buffer in memory and a goroutine writes
// what has gathered, so that under load one write system call carries many
// lines instead of one each.
package logwriter

import (
	"io"
	"sync"
	"time"
)

// maxBuffered is how much may wait for the writer goroutine before Write
// waits for it: a bound on memory when the output is slower than the log.
const maxBuffered = 1 << 20

// linger is how long the goroutine, woken by a line in an empty buffer,
// waits for more before it writes. Under load it is what makes one write
// carry many lines: without it the goroutine is woken, and writes, once
// for every line or two, and each wake and write costs more CPU than the
// line's formatting. A line reaches the output at most this late.
const linger = 2 * time.Millisecond

// A Writer buffers what is written to it and writes it to its output from
// a goroutine of its own, in the order written. The first line written to
// an empty buffer wakes the goroutine, which lingers (2 ms) for more and
// then writes all it has: at most a few hundred writes a second however
// many lines, and no timer runs while nothing is written. Writes are never
// dropped: past maxBuffered a Write waits until the goroutine has taken
// the buffer. Close writes what is left at once, and a Write after it goes
// straight to the output; call it before the process exits.
type Writer struct {
	out    io.Writer
	mu     sync.Mutex
	room   *sync.Cond // signalled when the goroutine takes the buffer
	buf    []byte
	err    error // the output's first error; later writes still try
	closed bool  // the goroutine has taken its last buffer
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	close  sync.Once

	// hold is the linger: it returns when the goroutine should write,
	// false if Close was called meanwhile.
	hold func(quit <-chan struct{}) bool
}

// New returns a Writer to out and starts its goroutine.
func New(out io.Writer) *Writer {
	t := time.NewTimer(linger)
	t.Stop()
	return start(out, func(quit <-chan struct{}) bool {
		t.Reset(linger)
		select {
		case <-t.C:
			return true
		case <-quit:
			t.Stop()
			return false
		}
	})
}

func start(out io.Writer, hold func(quit <-chan struct{}) bool) *Writer {
	w := &Writer{out: out, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), hold: hold}
	w.room = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// Write appends p to the buffer; it returns before p reaches the output.
// It reports the output's first error, if it has failed since.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	for !w.closed && len(w.buf) > 0 && len(w.buf)+len(p) > maxBuffered {
		w.room.Wait()
	}
	if w.closed {
		defer w.mu.Unlock()
		w.write(p)
		return len(p), w.err
	}
	first := len(w.buf) == 0
	w.buf = append(w.buf, p...)
	err := w.err
	w.mu.Unlock()
	if first { // else the line before woke it, and it has yet to take both
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return len(p), err
}

// run writes what gathers until Close.
func (w *Writer) run() {
	defer close(w.done)
	var spare []byte
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			w.flush(&spare, true)
			return
		}
		if !w.hold(w.quit) {
			w.flush(&spare, true)
			return
		}
		w.flush(&spare, false)
	}
}

// flush writes the buffer, swapping it with spare so that writers go on
// appending meanwhile. After the last, Write writes straight to the output.
func (w *Writer) flush(spare *[]byte, last bool) {
	w.mu.Lock()
	if last { // hold the lock: a Write after this one goes to out after it
		defer w.mu.Unlock()
		w.closed = true
		w.room.Broadcast()
		w.write(w.buf)
		return
	}
	b := w.buf
	w.buf = (*spare)[:0]
	w.room.Broadcast()
	w.mu.Unlock()
	if len(b) > 0 {
		err := w.writeOut(b)
		w.mu.Lock()
		w.keep(err)
		w.mu.Unlock()
	}
	if cap(b) > maxBuffered { // a burst's buffer is not kept
		b = nil
	}
	*spare = b
}

// writeOut writes b to the output; only the goroutine calls it, or Write
// and the last flush under the lock.
func (w *Writer) writeOut(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := w.out.Write(b)
	return err
}

// write writes b to the output and keeps its error; w.mu is held.
func (w *Writer) write(b []byte) { w.keep(w.writeOut(b)) }

// keep keeps err if it is the output's first; w.mu is held.
func (w *Writer) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Close writes what is buffered and stops the goroutine, and returns the
// output's first error. It may be called more than once.
func (w *Writer) Close() error {
	w.close.Do(func() { close(w.quit) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
