package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// An sseConn writes one SSE response, from one goroutine. On HTTP/1.x,
// Start takes the connection over (Hijack) and the body ends when it
// closes; on HTTP/2 it writes through the ResponseWriter. Every write has
// a deadline two heartbeats after the last Start or Beat.
type sseConn struct {
	w             http.ResponseWriter
	rc            *http.ResponseController
	heartbeat     time.Duration
	conn          net.Conn // once Start took it
	written       int64
	writtenAtBeat int64
	queued        int
	idleBeats     int
}

func newSSEConn(w http.ResponseWriter, heartbeat time.Duration) *sseConn {
	return &sseConn{w: w, rc: http.NewResponseController(w), heartbeat: heartbeat}
}

func setHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
}

func (c *sseConn) Head() {
	setHeaders(c.w.Header())
	c.w.WriteHeader(http.StatusOK)
}

// Start sends the headers and retry as the first message. Where it can, it
// takes the connection over, calls tookOver, and calls gone from a
// goroutine of its own once the client closes the connection or sends more
// than maxClientInput bytes. Otherwise it lifts the read deadline.
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

// maxClientInput is what a client may send once its connection is taken over.
const maxClientInput = 16 << 10

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

func (c *sseConn) Written() int64 { return c.written }

func (c *sseConn) extendDeadline() { c.setWriteDeadline(time.Now().Add(2 * c.heartbeat)) }

func (c *sseConn) setWriteDeadline(t time.Time) {
	if c.conn != nil {
		_ = c.conn.SetWriteDeadline(t)
		return
	}
	_ = c.rc.SetWriteDeadline(t)
}

// Write sends and flushes msg, whole SSE messages.
func (c *sseConn) Write(msg []byte) error {
	var w io.Writer = c.w
	if c.conn != nil {
		w = c.conn
	}
	n, err := w.Write(msg)
	c.written += int64(n)
	if err != nil || c.conn != nil {
		return err
	}
	return c.rc.Flush()
}

var heartbeatLine = []byte(":\n\n")

func (c *sseConn) Beat() error {
	c.extendDeadline()
	return c.Write(heartbeatLine)
}

// Stalled reports whether the connection has taken none of the bytes
// queued for it for two heartbeats in a row, which the deadline cannot see
// while the kernel buffers writes. Call it once a heartbeat.
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

// Close closes the connection Start took, if any, and reports whether it did.
func (c *sseConn) Close() bool {
	if c.conn == nil {
		return false
	}
	_ = c.conn.Close()
	return true
}

var errNotJSON = errors.New("streams: an event's data is not JSON")

// appendEvent appends to dst one SSE message. JSON with a line break is
// compacted first; data that is not JSON is refused with errNotJSON.
func appendEvent(dst []byte, id, event string, data json.RawMessage) ([]byte, error) {
	if bytes.ContainsAny(data, "\r\n") { // a line break would end the data: line; JSON needs none
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return dst, errNotJSON
		}
		data = buf.Bytes()
	}
	dst = slices.Grow(dst, len(id)+len(event)+len(data)+24)
	if id != "" {
		dst = append(append(append(dst, "id: "...), id...), '\n')
	}
	dst = append(append(append(dst, "event: "...), event...), '\n')
	return append(append(append(dst, "data: "...), data...), "\n\n"...), nil
}

// loop is [Pump]'s: it calls beat every heartbeat and ping on each probe,
// and shutdown when closing is closed.
func loop[T any](ctx context.Context, heartbeat time.Duration, closing, probe <-chan struct{}, source <-chan T,
	send func(v T, ok bool) error, beat, ping func() error, shutdown func()) {
	every := time.NewTicker(heartbeat)
	defer every.Stop()
	for {
		var err error
		select {
		case v, ok := <-source:
			err = send(v, ok)
		case <-every.C:
			err = beat()
		case <-probe:
			err = ping()
		case <-closing:
			shutdown()
			return
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}
