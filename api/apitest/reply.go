package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/streams"
)

// A Client calls one server over HTTP on behalf of a test.
type Client struct {
	URL  string // the server's base URL
	HTTP *http.Client
	tb   testing.TB
}

// Serve serves h on a real port until the test ends and returns its client.
func Serve(tb testing.TB, h http.Handler) *Client {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	tb.Cleanup(tr.CloseIdleConnections)
	return &Client{URL: srv.URL, HTTP: &http.Client{Transport: tr, Timeout: 60 * time.Second}, tb: tb}
}

// A Reply is a response read in full, and how long it took.
type Reply struct {
	Status int
	Header http.Header
	Body   string
	Took   time.Duration
}

// Envelope is the error body every refusal has.
type Envelope struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details struct {
		Errors []struct{ Location, Message string } `json:"errors"`
	} `json:"details"`
}

// Refusal is the envelope of a 429, with its details.
type Refusal struct {
	Code    string `json:"code"`
	Details struct {
		Scope       string `json:"scope"`
		Policy      string `json:"policy"`
		Limit       int    `json:"limit"`
		WindowS     int    `json:"window_s"`
		RetryAfterS int    `json:"retry_after_s"`
	} `json:"details"`
}

// Call sends method path with body as JSON (none when nil) and headers as
// "Name: value"; a transport error fails the test.
func (c *Client) Call(method, path string, body any, headers ...string) Reply {
	c.tb.Helper()
	r, err := c.CallContext(context.Background(), method, path, body, headers...)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// CallContext is Call under ctx, returning the transport's error.
func (c *Client) CallContext(ctx context.Context, method, path string, body any, headers ...string) (Reply, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	return Exchange(ctx, c.HTTP, method, c.URL+path, rd, headers...)
}

// Login logs user in, with headers as "Name: value".
func (c *Client) Login(user, password string, headers ...string) Reply {
	c.tb.Helper()
	return c.Call("POST", "/api/v1/auth/login", map[string]string{"username": user, "password": password}, headers...)
}

// Exchange sends one request (a body is sent as JSON) with headers as
// "Name: value" and reads the whole reply.
func Exchange(ctx context.Context, client *http.Client, method, url string, body io.Reader, headers ...string) (Reply, error) {
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return send(ctx, client, method, url, contentType, body, headers)
}

// send sends one request with body as contentType (none when "") and
// reads the whole reply.
func send(ctx context.Context, client *http.Client, method, url, contentType string, body io.Reader, headers []string) (Reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return Reply{}, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	addHeaders(req, headers)
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return Reply{Took: time.Since(start)}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return Reply{Status: res.StatusCode, Header: res.Header, Body: string(b), Took: time.Since(start)}, err
}

// addHeaders adds headers written "Name: value" to req.
func addHeaders(req *http.Request, headers []string) {
	for _, h := range headers {
		if k, v, ok := strings.Cut(h, ": "); ok {
			req.Header.Add(k, v)
		}
	}
}

// Code is the envelope's code, "" when the body is no envelope.
func (r Reply) Code() string {
	var env struct{ Code, Message string }
	if json.Unmarshal([]byte(r.Body), &env) != nil || env.Message == "" {
		return ""
	}
	return env.Code
}

// Decode reads the body into v, failing the test when it is not JSON.
func (r Reply) Decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(r.Body), v); err != nil {
		tb.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
}

// Refusal is the body read as a 429's envelope.
func (r Reply) Refusal(tb testing.TB) Refusal {
	tb.Helper()
	var env Refusal
	r.Decode(tb, &env)
	return env
}

// Want fails the test unless r has status; it returns r.
func (r Reply) Want(tb testing.TB, status int, what string) Reply {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("%s: %d %s, want %d", what, r.Status, r.Body, status)
	}
	return r
}

// WantUnavailable fails the test unless r is the 503 envelope with its Retry-After.
func (r Reply) WantUnavailable(tb testing.TB, what string) {
	tb.Helper()
	want := strconv.Itoa(int(api.RetryUnavailable / time.Second))
	if r.Status != http.StatusServiceUnavailable || r.Code() != "unavailable" || r.Header.Get("Retry-After") != want {
		tb.Fatalf("%s: %d Retry-After=%q %s, want 503 unavailable with Retry-After: %s", what, r.Status, r.Header.Get("Retry-After"), r.Body, want)
	}
}

// Cookie is the "Cookie: brain_session=..." header a 200 login set.
func (r Reply) Cookie(tb testing.TB) string {
	tb.Helper()
	for _, sc := range r.Header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(sc, api.SessionCookie+"="); ok {
			v, _, _ = strings.Cut(v, ";")
			return "Cookie: " + api.SessionCookie + "=" + v
		}
	}
	tb.Fatalf("no session cookie in %d %s", r.Status, r.Body)
	return ""
}

// Post sends body to path as it is, as contentType; no reply fails the test.
func (c *Client) Post(path, contentType string, body []byte, chunked bool, headers ...string) Reply {
	c.tb.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // of unknown length: sent chunked
	}
	r, err := send(context.Background(), c.HTTP, "POST", c.URL+path, contentType, rd, headers)
	if err != nil && r.Status == 0 { // a reply cut short is returned as far as it came
		c.tb.Fatalf("POST %s: %v", path, err)
	}
	return r
}

// OpenRequest opens a connection of its own and writes the head of a POST
// of JSON to path, then body, which may be only its start.
func (c *Client) OpenRequest(path string, headers []string, body []byte) (net.Conn, *bufio.Reader) {
	c.tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.URL, "http://"))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(func() { conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: brain\r\nContent-Type: application/json\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		c.tb.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

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

// LiveSnapshot opens GET /api/v1/system/live and returns its first snapshot
// taken after the call began (by the real clock), past those kept before.
func (c *Client) LiveSnapshot(headers ...string) streams.LiveSnapshot {
	c.tb.Helper()
	began := time.Now()
	st, r := c.OpenStream(api.Prefix+"/system/live", headers...)
	if st == nil {
		c.tb.Fatalf("the live stream: %d %s", r.Status, r.Body)
	}
	var snap streams.LiveSnapshot
	for snap.At.Before(began) {
		if m := st.NextEvent(c.tb); m.Event != "system.live" || json.Unmarshal([]byte(m.Data), &snap) != nil {
			c.tb.Fatalf("the live stream's event: %+v; want a system.live snapshot", m)
		}
	}
	return snap
}
