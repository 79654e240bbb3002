package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/brain-template/brain/api/apitest"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
)

// live is a handler served on a real port, for tests that need real
// connections: many at once, or a client that goes away.
type live struct {
	tb     testing.TB
	url    string
	client *http.Client
}

// mustLive serves h with httptest.NewServer until the test ends. Every
// call times out after 60 s: a hang fails the test instead of stalling it.
func mustLive(tb testing.TB, h http.Handler) *live {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	tb.Cleanup(tr.CloseIdleConnections)
	return &live{tb: tb, url: srv.URL, client: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// reply is a response read in full, and how long it took.
type reply struct {
	status int
	header http.Header
	body   string
	took   time.Duration
}

// code is the envelope's code, "" when the body is no envelope.
func (r reply) code() string {
	var env struct{ Code, Message string }
	if json.Unmarshal([]byte(r.body), &env) != nil || env.Message == "" {
		return ""
	}
	return env.Code
}

// decode reads the body into v, failing the test when it is not JSON.
func (r reply) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		tb.Fatalf("body is not JSON: %v: %s", err, r.body)
	}
}

// call sends method path with body as JSON (none when nil) and headers as
// "Name: value"; a transport error fails the test.
func (l *live) call(method, path string, body any, headers ...string) reply {
	l.tb.Helper()
	r, err := l.callContext(context.Background(), method, path, body, headers...)
	if err != nil {
		l.tb.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// callContext is call under ctx, returning the transport's error.
func (l *live) callContext(ctx context.Context, method, path string, body any, headers ...string) (reply, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	return exchange(ctx, l.client, method, l.url+path, rd, headers...)
}

// exchange is apitest.Exchange, its reply in this package's form.
func exchange(ctx context.Context, client *http.Client, method, url string, body io.Reader, headers ...string) (reply, error) {
	r, err := apitest.Exchange(ctx, client, method, url, body, headers...)
	return reply{status: r.Status, header: r.Header, body: r.Body, took: r.Took}, err
}

// login logs user in from the given X-Forwarded-For headers, if any.
func (l *live) login(user, password string, headers ...string) reply {
	l.tb.Helper()
	return l.call("POST", "/api/v1/auth/login", map[string]string{"username": user, "password": password}, headers...)
}

// cookie is the "Cookie: brain_session=..." header a 200 login set.
func (r reply) cookie(tb testing.TB) string {
	tb.Helper()
	for _, sc := range r.header.Values("Set-Cookie") {
		if v, ok := strings.CutPrefix(sc, "brain_session="); ok {
			v, _, _ = strings.Cut(v, ";")
			return "Cookie: brain_session=" + v
		}
	}
	tb.Fatalf("no session cookie in %d %s", r.status, r.body)
	return ""
}

// want fails the test unless r has status; it returns r.
func (r reply) want(tb testing.TB, status int, what string) reply {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	return r
}

// wantUnavailable fails the test unless r is the 503 envelope with the
// Retry-After every 503 carries.
func (r reply) wantUnavailable(tb testing.TB, what string) {
	tb.Helper()
	want := strconv.Itoa(int(api.RetryUnavailable / time.Second))
	if r.status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.header.Get("Retry-After") != want {
		tb.Fatalf("%s: %d Retry-After=%q %s, want 503 unavailable with Retry-After: %s", what, r.status, r.header.Get("Retry-After"), r.body, want)
	}
}
