package api_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// bodyServer serves the platform's API with bodies as the
// bytes-in-flight bounds, and returns ada's session cookie.
func bodyServer(t *testing.T, bodies api.BodyBudget) (*api.Server, *live, *auth.Service, string) {
	t.Helper()
	svc := MustAuth(t)
	s, l, _ := streamServerWith(t, api.Config{Auth: svc, Bodies: bodies}, nil)
	return s, l, svc, l.login("ada", "correct horse battery").cookie(t)
}

// bodyOperations are the operations of s that read a body, by path.
func bodyOperations(t *testing.T, s *api.Server) map[string]*huma.Operation {
	t.Helper()
	ops := map[string]*huma.Operation{}
	for path, item := range s.API.OpenAPI().Paths {
		if op := item.Post; op != nil && op.RequestBody != nil {
			ops[path] = op
		}
		for _, op := range []*huma.Operation{item.Put, item.Patch, item.Delete} {
			if op != nil && op.RequestBody != nil {
				t.Fatalf("%s %s reads a body: the test sends only POST", op.Method, path)
			}
		}
	}
	if len(ops) < 4 {
		t.Fatalf("only %d operations read a body", len(ops))
	}
	return ops
}

// post sends body to path with ada's cookie and the Content-Type given;
// chunked sends it without a Content-Length.
func post(t *testing.T, l *live, path, contentType string, body []byte, chunked bool, headers ...string) reply {
	t.Helper()
	var rd io.Reader = strings.NewReader(string(body))
	if chunked {
		rd = io.MultiReader(rd) // of unknown length: sent chunked
	}
	req, _ := http.NewRequest("POST", l.url+path, rd)
	req.Header.Set("Content-Type", contentType)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	res, err := l.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

// An operation's MaxBodyBytes is the largest body it accepts, that many
// bytes included, whether the body declares its length or comes chunked;
// one byte more is 413. (huma's reader refused a body of exactly the
// limit: an 8 MiB batch got 413.)
func TestBodyLimitIsInclusive(t *testing.T) {
	s, l, _, ada := bodyServer(t, api.BodyBudget{})
	for path, op := range bodyOperations(t, s) {
		limit := api.BodyLimit(op)
		for _, chunked := range []bool{false, true} {
			at := append([]byte("{"), append([]byte(strings.Repeat(" ", int(limit)-2)), '}')...)
			if r := post(t, l, path, "application/json", at, chunked, ada); r.status == http.StatusRequestEntityTooLarge {
				t.Errorf("%s: a body of exactly %d bytes (chunked %v): 413 %s", path, limit, chunked, r.body)
			}
			over := append(at, ' ')
			if r := post(t, l, path, "application/json", over, chunked, ada); r.status != http.StatusRequestEntityTooLarge || r.code() != "payload-too-large" {
				t.Errorf("%s: a body of %d bytes (chunked %v): %d %s, want 413", path, limit+1, chunked, r.status, r.body)
			}
		}
	}
}

// openRequest opens a connection to l and sends the head of a POST to path
// with headers, and then body; it returns the connection, whose reader
// reads the answer.
func openRequest(t *testing.T, l *live, path string, headers []string, body []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: brain\r\nContent-Type: application/json\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// A Content-Length over an operation's limit is refused at once, before
// a byte of the body is read (a login declaring 8 MB waited 5 s for its
// body, then answered 408).
func TestContentLengthOverTheLimitIsRefusedAtOnce(t *testing.T) {
	s, l, _, ada := bodyServer(t, api.BodyBudget{})
	for path, op := range bodyOperations(t, s) {
		for _, declared := range []int64{api.BodyLimit(op) + 1, 8_000_000_000} {
			best := time.Hour
			var res *http.Response
			for range 3 { // the best of three: a loaded machine may pause one
				start := time.Now()
				conn, rd := openRequest(t, l, path, []string{"Content-Length: " + strconv.FormatInt(declared, 10), ada}, nil)
				_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
				var err error
				if res, err = http.ReadResponse(rd, nil); err != nil {
					t.Fatalf("%s, Content-Length %d: %v", path, declared, err)
				}
				res.Body.Close()
				best = min(best, time.Since(start))
				conn.Close()
			}
			if res.StatusCode != http.StatusRequestEntityTooLarge || best > 100*time.Millisecond {
				t.Errorf("%s, Content-Length %d: %d after %v, want 413 at once", path, declared, res.StatusCode, best)
			}
		}
	}
}

// A JSON body is UTF-8: a Content-Type naming another charset is refused,
// rather than its text misread, on every operation that reads a body.
func TestBodyCharsetMustBeUTF8(t *testing.T) {
	s, l, _, ada := bodyServer(t, api.BodyBudget{})
	for path := range bodyOperations(t, s) {
		for _, ct := range []string{"application/json; charset=iso-8859-1", "application/json;charset=windows-1252", `application/json; charset="utf-16"`} {
			r := post(t, l, path, ct, []byte(`{}`), false, ada)
			if r.status != http.StatusUnsupportedMediaType || r.code() != "unsupported-media-type" || strings.Contains(r.body, "iso") {
				t.Errorf("%s as %s: %d %s, want 415", path, ct, r.status, r.body)
			}
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8", `application/json; charset="utf-8"`} {
			if r := post(t, l, path, ct, []byte(`{}`), false, ada); r.status == http.StatusUnsupportedMediaType {
				t.Errorf("%s as %s: 415 %s", path, ct, r.body)
			}
		}
	}
}
