package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// bodyServer serves the platform's API with bodies as the
// bytes-in-flight bounds, and returns ada's session cookie.
func bodyServer(t *testing.T, bodies api.BodyBudget) (*api.Server, *apitest.Client, *auth.Service, string) {
	t.Helper()
	svc := MustAuth(t)
	s, l, _ := streamServer(t, api.Config{Auth: svc, Bodies: bodies})
	return s, l, svc, l.Login("ada", "correct horse battery").Cookie(t)
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
			if r := l.Post(path, "application/json", at, chunked, ada); r.Status == http.StatusRequestEntityTooLarge {
				t.Errorf("%s: a body of exactly %d bytes (chunked %v): 413 %s", path, limit, chunked, r.Body)
			}
			over := append(at, ' ')
			if r := l.Post(path, "application/json", over, chunked, ada); r.Status != http.StatusRequestEntityTooLarge || r.Code() != "payload-too-large" {
				t.Errorf("%s: a body of %d bytes (chunked %v): %d %s, want 413", path, limit+1, chunked, r.Status, r.Body)
			}
		}
	}
}

// A Content-Length over an operation's limit is refused at once, before
// a byte of the body is read: no body is sent, and a server waiting for
// it would answer 408 after its 5 s read timeout. The 2 s bound lies
// between, with room for a loaded machine.
func TestContentLengthOverTheLimitIsRefusedAtOnce(t *testing.T) {
	s, l, _, ada := bodyServer(t, api.BodyBudget{})
	for path, op := range bodyOperations(t, s) {
		for _, declared := range []int64{api.BodyLimit(op) + 1, 8_000_000_000} {
			best := time.Hour
			var res *http.Response
			for range 3 { // the best of three: a loaded machine may pause one
				start := time.Now()
				conn, rd := l.OpenRequest(path, []string{"Content-Length: " + strconv.FormatInt(declared, 10), ada}, nil)
				_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
				var err error
				if res, err = http.ReadResponse(rd, nil); err != nil {
					t.Fatalf("%s, Content-Length %d: %v", path, declared, err)
				}
				res.Body.Close()
				best = min(best, time.Since(start))
				conn.Close()
			}
			if res.StatusCode != http.StatusRequestEntityTooLarge || best > 2*time.Second {
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
			r := l.Post(path, ct, []byte(`{}`), false, ada)
			if r.Status != http.StatusUnsupportedMediaType || r.Code() != "unsupported-media-type" || strings.Contains(r.Body, "iso") {
				t.Errorf("%s as %s: %d %s, want 415", path, ct, r.Status, r.Body)
			}
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json; charset=UTF-8", `application/json; charset="utf-8"`} {
			if r := l.Post(path, ct, []byte(`{}`), false, ada); r.Status == http.StatusUnsupportedMediaType {
				t.Errorf("%s as %s: 415 %s", path, ct, r.Body)
			}
		}
	}
}

// A media type is case-insensitive (RFC 9110 8.3.1): APPLICATION/JSON is
// application/json on every operation that reads a body, whatever case
// or spaces its type and parameters have; another type is still 415.
func TestBodyMediaTypeIgnoresCase(t *testing.T) {
	s, l, _, ada := bodyServer(t, api.BodyBudget{})
	for path := range bodyOperations(t, s) {
		for _, ct := range []string{"APPLICATION/JSON", "Application/Json; Charset=UTF-8", "application/JSON ;charset=utf-8"} {
			if r := l.Post(path, ct, []byte(`{}`), false, ada); r.Status == http.StatusUnsupportedMediaType {
				t.Errorf("%s as %s: 415 %s", path, ct, r.Body)
			}
		}
		if r := l.Post(path, "TEXT/PLAIN", []byte(`{}`), false, ada); r.Status != http.StatusUnsupportedMediaType {
			t.Errorf("%s as TEXT/PLAIN: %d %s, want 415", path, r.Status, r.Body)
		}
	}
}
