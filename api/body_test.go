package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

// bodyServer serves the whole API, memory included, with bodies as the
// bytes-in-flight bounds, and returns ada's session cookie.
func bodyServer(t *testing.T, bodies api.BodyBudget) (*api.Server, *live, *auth.Service, string) {
	t.Helper()
	svc := MustAuth(t)
	db, _ := dbOf.Load(svc)
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db.(*store.DB), nil), ingest.Config{Publish: ingest.Publisher(hub)})
	s, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, Streams: api.StreamConfig{Hub: hub}, Bodies: bodies}, nil)
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

// validBatch is a valid batch of exactly n bytes: 1000 items whose texts
// fill it.
func validBatch(n int) []byte {
	const prefix, suffix, item = `{"project":"p","items":[`, `]}`, `{"text":""}`
	room := n - len(prefix) - len(suffix) - ingest.MaxItems*len(item) - (ingest.MaxItems - 1)
	var b strings.Builder
	b.WriteString(prefix)
	for i := range ingest.MaxItems {
		if i > 0 {
			b.WriteByte(',')
		}
		size := room / ingest.MaxItems
		if i == 0 {
			size += room % ingest.MaxItems
		}
		b.WriteString(`{"text":"` + strings.Repeat("x", size) + `"}`)
	}
	b.WriteString(suffix)
	return []byte(b.String())
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
	batch := validBatch(ingest.MaxBodyBytes)
	if len(batch) != ingest.MaxBodyBytes {
		t.Fatalf("the batch is %d bytes", len(batch))
	}
	post(t, l, "/api/v1/memory/ingest", "application/json", batch, false, ada).want(t, http.StatusAccepted, "a valid batch of exactly 8 MiB")
	if r := post(t, l, "/api/v1/memory/ingest", "application/json", append(batch, '\n'), false, ada); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("the same batch and a newline: %d, want 413", r.status)
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

// waitInFlight waits until s holds want bytes of bodies in flight.
func waitInFlight(t *testing.T, s *api.Server, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.BodyBytesInFlight() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of bodies in flight, want %d", s.BodyBytesInFlight(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The bytes of large bodies in flight are bounded, per user and for the
// whole server: a body past either bound is refused before it is read,
// 503 with Retry-After: 1; a body's bytes are held from before it is read
// until its request ends, also when the client hangs up in the middle.
func TestBodiesInFlightAreBounded(t *testing.T) {
	const mib = 1 << 20
	s, l, svc, ada := bodyServer(t, api.BodyBudget{InFlight: 24 * mib, PerCaller: 16 * mib})
	if _, err := svc.AddUser(context.Background(), "bob", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	bob := l.login("bob", "correct horse battery").cookie(t)
	small := []byte(`{"project":"p","items":[{"text":"a small batch"}]}`)
	// started sends the head and the first bytes of a batch of 8 MiB, and
	// stops there: its request holds its bytes while it waits for the rest.
	started := func(cookie string, chunked bool) net.Conn {
		h := "Content-Length: " + strconv.Itoa(ingest.MaxBodyBytes)
		first := []byte(`{"project":"p","items":[`)
		if chunked {
			h = "Transfer-Encoding: chunked"
			first = fmt.Appendf(nil, "%x\r\n%s\r\n", len(first), first)
		}
		conn, _ := openRequest(t, l, "/api/v1/memory/ingest", []string{h, cookie}, first)
		return conn
	}
	busy := func(r reply, what, says string) {
		t.Helper()
		if r.status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, says) || !strings.Contains(r.body, "retry") {
			t.Fatalf("%s: %d Retry-After=%q %s; want 503 with Retry-After: 1 saying %q", what, r.status, r.header.Get("Retry-After"), r.body, says)
		}
	}

	a1, a2 := started(ada, false), started(ada, true) // a chunked body holds as much as it may be
	waitInFlight(t, s, 16*mib)
	busy(post(t, l, "/api/v1/memory/ingest", "application/json", small, false, ada), "ada's third body", "you have 16777216 bytes")
	b1 := started(bob, false)
	waitInFlight(t, s, 24*mib)
	busy(post(t, l, "/api/v1/memory/ingest", "application/json", small, false, bob), "bob's second body, past the server's bound", "as many large request bodies")
	post(t, l, "/api/v1/auth/login", "application/json", []byte(`{"username":"bob","password":"correct horse battery"}`), false).
		want(t, http.StatusOK, "a small body, which draws from no bound")

	a1.Close() // ada hangs up in the middle of her body: its bytes are free again
	waitInFlight(t, s, 16*mib)
	post(t, l, "/api/v1/memory/ingest", "application/json", small, false, ada).want(t, http.StatusAccepted, "ada's body once one of hers ended")
	a2.Close()
	b1.Close()
	waitInFlight(t, s, 0)
}

// No refusal of a batch repeats a member name the client chose: the 422
// names the place (the batch, or the item) and the members it may have.
func TestIngestErrorsNameNoMember(t *testing.T) {
	_, l, _, ada := bodyServer(t, api.BodyBudget{})
	name := `<script>alert(1)</script>`
	for _, c := range []struct{ body, where, says string }{
		{`{"project":"p","items":[{"text":"x"}],"` + name + `":1}`, "body", "is not one of ingest_id, project, items"},
		{`{"project":"p","items":[{"text":"x","` + name + `":1}]}`, "body.items[0]", "is not one of text, kind, skill, tags, occurred_at"},
		{`{"project":"p","items":[{"text":"x","` + strings.Repeat("y", 20000) + `":1}]}`, "body.items[0]", "is not one of"},
		{`{"project":"p","project":"p","items":[{"text":"x"}]}`, "body.project", "is given twice"},
		{`{"project":"p","items":[{"text":"x","\u0074ext":"y"}]}`, "body.items[0].text", "is given twice"},
	} {
		r := post(t, l, "/api/v1/memory/ingest", "application/json", []byte(c.body), false, ada)
		var env envelope
		r.decode(t, &env)
		if r.status != http.StatusUnprocessableEntity || len(env.Details.Errors) != 1 || env.Details.Errors[0].Location != c.where ||
			!strings.Contains(env.Details.Errors[0].Message, c.says) {
			t.Errorf("%.60s: %d %s; want 422 at %s: %s", c.body, r.status, r.body, c.where, c.says)
		}
		if strings.Contains(r.body, "script") || strings.Contains(r.body, "yyy") || len(r.body) > 1024 {
			t.Errorf("%.60s: the answer repeats the body: %s", c.body, r.body)
		}
	}
}

// The spec says what the server enforces: the ingest operation declares
// its 503 and the bound in its description; an operation with a small
// body limit draws from no bound, and says nothing of it.
func TestSpecDeclaresBodiesInFlight(t *testing.T) {
	s, _, _, _ := bodyServer(t, api.BodyBudget{InFlight: 40 << 20, PerCaller: 10 << 20})
	paths := s.API.OpenAPI().Paths
	ingestOp, login := paths["/api/v1/memory/ingest"].Post, paths["/api/v1/auth/login"].Post
	if ingestOp.Responses["503"] == nil || !strings.Contains(ingestOp.Description, "10 MiB (10485760 bytes) from one caller, 40 MiB (41943040 bytes) from all") ||
		!strings.Contains(ingestOp.Description, "at most 8 MiB (8388608 bytes), that many bytes included") {
		t.Fatalf("ingest: 503 %v, description %q", ingestOp.Responses["503"], ingestOp.Description)
	}
	if strings.Contains(login.Description, "in flight") {
		t.Fatalf("login: %q", login.Description)
	}
}
