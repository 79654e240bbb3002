// This file is the transport of one SSE response: its headers, the
// takeover of its connection (Hijack), its write deadlines, its
// heartbeats, and the check that finds a client that stopped reading.

package streams

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// A Conn writes one SSE response, once the stream's door has admitted it.
//
// On HTTP/1.x, [Conn.Start] takes the connection over from net/http
// (Hijack), so the handler may return and the connection's net/http
// goroutines and buffers (some 20 KiB) are freed for as long as the
// stream lives; the response's body then ends when the connection
// closes, which HTTP/1.1 allows for a response with neither
// Content-Length nor chunking. Where the connection cannot be taken
// (HTTP/2) the stream is written through the ResponseWriter.
//
// Every write has a deadline: two heartbeats from the last [Conn.Start]
// or [Conn.Beat], on the kernel's clock. A Conn is used by one goroutine.
type sseConn struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	heartbeat time.Duration
	// The connection once Start took it, and what Stalled needs: bytes
	// written, and at the last Stalled, bytes queued in the kernel and
	// bytes written.
	conn          net.Conn
	written       int64
	writtenAtBeat int64
	queued        int
	idleBeats     int
}

// newSSEConn is the transport of the response w, whose stream beats every
// heartbeat (which must be positive).
func newSSEConn(w http.ResponseWriter, heartbeat time.Duration) *sseConn {
	return &sseConn{w: w, rc: http.NewResponseController(w), heartbeat: heartbeat}
}

// setHeaders sets the headers of an SSE response: its content type, and
// no caching (a stream is its caller's, as every authenticated answer
// is: no-store) or buffering on the way.
func setHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
}

// Head answers a HEAD request: the stream's headers and 200, no body.
func (c *sseConn) Head() {
	setHeaders(c.w.Header())
	c.w.WriteHeader(http.StatusOK)
}

// Start sends the stream's headers (the ResponseWriter's, with
// [setHeaders]') and retry, its reconnection delay, as the stream's first
// message. Where it can, it takes the connection over (see [Conn]): it
// then calls tookOver, after which the ResponseWriter is not used again
// and the handler may return, and calls gone, from a goroutine of its
// own, once the client closes the connection or sends more than
// maxClientInput bytes on it (HTTP/1.1 gives it no other answer on that
// connection: what it sends is dropped, and a client that floods it is cut
// off rather than read without end). Otherwise the request's read
// deadline is lifted (the server's would cancel the request's context
// when it passed), and tookOver and gone are never called.
func (c *sseConn) Start(retry time.Duration, tookOver, gone func()) error {
	setHeaders(c.w.Header())
	hint := "retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n\n"
	if conn, _, err := c.rc.Hijack(); err == nil {
		var head bytes.Buffer
		head.WriteString("HTTP/1.1 200 OK\r\n")
		h := c.w.Header()
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		h.Set("Connection", "close")
		_ = h.Write(&head)
		head.WriteString("\r\n" + hint)
		c.conn = conn
		tookOver()
		go c.watch(gone)
		c.extendDeadline()
		return c.Write(head.Bytes())
	}
	c.w.WriteHeader(http.StatusOK)
	_ = c.rc.SetReadDeadline(time.Time{})
	c.extendDeadline()
	return c.Write([]byte(hint))
}

// maxClientInput is what a stream's client may send after its request,
// once its connection is taken over: room for a pipelined request or two.
const maxClientInput = 16 << 10

// watch calls gone when the client closes the connection, or has sent
// more than maxClientInput bytes on it.
func (c *sseConn) watch(gone func()) {
	var b [64]byte
	for read := 0; read <= maxClientInput; {
		n, err := c.conn.Read(b[:])
		if err != nil {
			break
		}
		read += n
	}
	gone()
}

// TookOver reports whether Start took the connection over.
func (c *sseConn) TookOver() bool { return c.conn != nil }

// Written is how many bytes the stream has written, headers included
// when it took the connection over.
func (c *sseConn) Written() int64 { return c.written }

// extendDeadline gives the stream's writes two heartbeats from now, on
// the kernel's clock (not an injected one). Beat extends it again, so a
// write always has at least a heartbeat.
func (c *sseConn) extendDeadline() { c.setWriteDeadline(time.Now().Add(2 * c.heartbeat)) }

func (c *sseConn) setWriteDeadline(t time.Time) {
	if c.conn != nil {
		_ = c.conn.SetWriteDeadline(t)
		return
	}
	_ = c.rc.SetWriteDeadline(t)
}

// Write sends msg, one or more whole SSE messages, and flushes it, by the
// write deadline: a write that waits past it fails, and the stream
// should end.
func (c *sseConn) Write(msg []byte) error {
	if c.conn != nil {
		n, err := c.conn.Write(msg)
		c.written += int64(n)
		return err
	}
	n, err := c.w.Write(msg)
	c.written += int64(n)
	if err != nil {
		return err
	}
	return c.rc.Flush()
}

// Heartbeat is the comment line a stream sends when it is due.
var heartbeatLine = []byte(":\n\n")

// Beat is the transport's part of a heartbeat: it extends the write
// deadline and writes the comment, which keeps proxies from closing an
// idle stream and finds dead clients. Check [Conn.Stalled] first.
func (c *sseConn) Beat() error {
	c.extendDeadline()
	return c.Write(heartbeatLine)
}

// Stalled reports whether the connection has taken none of the bytes
// queued for it for two heartbeats in a row: a client that stopped
// reading once its window was full, or a peer that is gone without a
// word. (The write deadline cannot see either while the kernel still
// buffers the stream's writes.) Call it once a heartbeat. Where the
// kernel cannot say (not Linux, not TCP, not taken over), it reports
// false.
func (c *sseConn) Stalled() bool {
	queued, ok := unsentBytes(c.conn)
	if !ok {
		return false
	}
	drained := int64(c.queued) + (c.written - c.writtenAtBeat) - int64(queued)
	if c.queued > 0 && drained <= 0 {
		c.idleBeats++
	} else {
		c.idleBeats = 0
	}
	c.queued, c.writtenAtBeat = queued, c.written
	return c.idleBeats >= 2
}

// Abort makes any write fail at once: a stalled stream's client will take
// nothing more, so its end need not wait for the response to finish.
func (c *sseConn) Abort() { c.setWriteDeadline(time.Now()) }

// Close closes the connection Start took, if it took one, and reports
// whether it did.
func (c *sseConn) Close() bool {
	if c.conn == nil {
		return false
	}
	_ = c.conn.Close()
	return true
}
