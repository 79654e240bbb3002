package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/streams"
)

// A Stream is one open stream, read message by message.
type Stream struct {
	res    *http.Response
	rd     *bufio.Reader
	cancel context.CancelFunc
}

// A Message is one message of a stream; a heartbeat is a comment.
type Message struct {
	ID, Event, Data string
	Comment         bool
}

// OpenStream opens path; a reply other than 200 is read in full and
// returned, with a nil Stream.
func (c *Client) OpenStream(path string, headers ...string) (*Stream, Reply) {
	c.tb.Helper()
	url := c.URL + path
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	addHeaders(req, headers)
	res, err := c.HTTP.Do(req)
	if err != nil {
		cancel()
		c.tb.Fatalf("GET %s: %v", url, err)
	}
	r := Reply{Status: res.StatusCode, Header: res.Header}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		r.Body = string(b)
		return nil, r
	}
	st := &Stream{res: res, rd: bufio.NewReader(res.Body), cancel: cancel}
	c.tb.Cleanup(st.Close)
	return st, r
}

// Close ends the stream from the client's side.
func (s *Stream) Close() { s.cancel(); s.res.Body.Close() }

// Response is the stream's response (its protocol, its headers).
func (s *Stream) Response() *http.Response { return s.res }

// Rest reads what is left of the stream until it ends.
func (s *Stream) Rest() ([]byte, error) { return io.ReadAll(s.rd) }

// Next reads the next message, skipping retry-only ones, failing the test after 5 s.
func (s *Stream) Next(tb testing.TB) Message {
	tb.Helper()
	type result struct {
		m   Message
		err error
	}
	done := make(chan result, 1)
	go func() {
		var m Message
		for {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				done <- result{err: err}
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if m.Comment || m.Event != "" || m.Data != "" {
					done <- result{m: m}
					return
				}
			case strings.HasPrefix(line, ":"):
				m.Comment = true
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.Data = line[6:]
			}
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			tb.Fatalf("stream ended: %v", r.err)
		}
		return r.m
	case <-time.After(5 * time.Second):
		tb.Fatal("no message within 5 s")
	}
	return Message{}
}

// NextEvent skips heartbeats to the next event, within 5 s.
func (s *Stream) NextEvent(tb testing.TB) Message {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if m := s.Next(tb); !m.Comment {
			return m
		}
	}
	tb.Fatal("only heartbeats for 5 s")
	return Message{}
}

// Scrape returns what m's /metrics says now, scraped over HTTP.
func Scrape(tb testing.TB, m *api.Metrics) string {
	tb.Helper()
	return Serve(tb, m.Handler()).Call("GET", "/", nil).Body
}

// LiveSnapshot opens GET /api/v1/system/live and returns its first snapshot.
func (c *Client) LiveSnapshot(headers ...string) streams.LiveSnapshot {
	c.tb.Helper()
	st, r := c.OpenStream(api.Prefix+"/system/live", headers...)
	if st == nil {
		c.tb.Fatalf("the live stream: %d %s", r.Status, r.Body)
	}
	var snap streams.LiveSnapshot
	if m := st.NextEvent(c.tb); m.Event != "system.live" || json.Unmarshal([]byte(m.Data), &snap) != nil {
		c.tb.Fatalf("the live stream's first event: %+v; want a system.live snapshot", m)
	}
	return snap
}
