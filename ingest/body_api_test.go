// The memory example's large bodies: the bytes in flight bound them,
// its batch may be exactly MaxBodyBytes, and its refusals name no member.

package ingest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
)

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

// The bytes of large bodies in flight are bounded: the lengths of a
// user's bodies, and the bytes arrived of everyone's. A body past either
// bound is refused before it is read, 503 with Retry-After: 1; a body's
// claim and bytes are held until its request ends, also when the client
// hangs up in the middle.
func TestBodiesInFlightAreBounded(t *testing.T) {
	const mib = 1 << 20
	s, l, svc, ada := bodyServer(t, api.BodyBudget{InFlight: 24 * mib, PerCaller: 16 * mib})
	bob := addUser(t, svc, l, "bob")
	small := []byte(`{"project":"p","items":[{"text":"a small batch"}]}`)
	busy := func(r reply, what, says string) {
		t.Helper()
		if r.Status != http.StatusServiceUnavailable || r.Code() != "unavailable" || r.Header.Get("Retry-After") != "1" || !strings.Contains(r.Body, says) || !strings.Contains(r.Body, "retry") {
			t.Fatalf("%s: %d Retry-After=%q %s; want 503 with Retry-After: 1 saying %q", what, r.Status, r.Header.Get("Retry-After"), r.Body, says)
		}
	}

	// Two of ada's bodies claim her 16 MiB (a chunked one claims as much
	// as it may be); all but their last byte sent, 16 MiB less 2 arrived.
	a1, a2 := startBody(t, l, ada, false, 8*mib-1), startBody(t, l, ada, true, 8*mib-1)
	waitInFlight(t, s, 16*mib-2)
	busy(l.Post("/api/v1/memory/ingest", "application/json", small, false, ada), "ada's third body", "you have 16777216 bytes")
	b1 := startBody(t, l, bob, false, 8*mib-1)
	waitInFlight(t, s, 24*mib-3)
	busy(l.Post("/api/v1/memory/ingest", "application/json", small, false, bob), "bob's second body, past the server's bound", "as many large request bodies")
	l.Post("/api/v1/auth/login", "application/json", []byte(`{"username":"bob","password":"correct horse battery"}`), false).
		Want(t, http.StatusOK, "a small body, which draws from no bound")

	a1.Close() // ada hangs up in the middle of her body: its bytes are free again
	waitInFlight(t, s, 16*mib-2)
	l.Post("/api/v1/memory/ingest", "application/json", small, false, ada).Want(t, http.StatusAccepted, "ada's body once one of hers ended")
	a2.Close()
	b1.Close()
	waitInFlight(t, s, 0)
}

// Bodies whose bytes have not arrived hold their own user's room, not
// the server's (the attack of issue 27: four accounts, each with two ingests declaring
// 8 MiB and then sending a byte a second, held the whole 64 MiB, and every
// other user's ingest was refused 503).
func TestSlowBodiesHoldOnlyWhatArrived(t *testing.T) {
	s, l, svc, _ := bodyServer(t, api.BodyBudget{})
	for i := range 4 {
		cookie := addUser(t, svc, l, fmt.Sprintf("slow%d", i))
		for range 2 {
			startBody(t, l, cookie, false, 10)
		}
	}
	waitInFlight(t, s, 8*10)
	carol := addUser(t, svc, l, "carol")
	l.Post("/api/v1/memory/ingest", "application/json", []byte(`{"project":"p","items":[{"text":"a small batch"}]}`), false, carol).
		Want(t, http.StatusAccepted, "another user's small ingest beside eight slow bodies")
}

// bodyStart is how startBody's batches begin.
const bodyStart = `{"project":"p","items":[{"text":"`

// startBody sends the head of an ingest of 8 MiB (or chunked) and its
// first n bytes, and stops there: its
// request holds the bytes that came while it waits for the rest.
func startBody(t *testing.T, l *live, cookie string, chunked bool, n int) net.Conn {
	t.Helper()
	h := "Content-Length: " + strconv.Itoa(ingest.MaxBodyBytes)
	first := []byte((bodyStart + strings.Repeat("x", max(0, n-len(bodyStart))))[:n])
	if chunked { // whole chunks: net/http's reader hands on a chunk's bytes when it ends or fills the reader's buffer
		h = "Transfer-Encoding: chunked"
		var framed []byte
		for rest := first; len(rest) > 0; {
			chunk := rest[:min(len(rest), 64<<10)]
			framed, rest = append(fmt.Appendf(framed, "%x\r\n", len(chunk)), append(chunk, "\r\n"...)...), rest[len(chunk):]
		}
		first = framed
	}
	conn, _ := l.OpenRequest("/api/v1/memory/ingest", []string{h, cookie}, first)
	return conn
}

// addUser adds a user name and returns its session cookie.
func addUser(t *testing.T, svc *auth.Service, l *live, name string) string {
	t.Helper()
	if _, err := svc.AddUser(context.Background(), name, "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	return l.Login(name, "correct horse battery").Cookie(t)
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
		r := l.Post("/api/v1/memory/ingest", "application/json", []byte(c.body), false, ada)
		var env envelope
		r.Decode(t, &env)
		if r.Status != http.StatusUnprocessableEntity || len(env.Details.Errors) != 1 || env.Details.Errors[0].Location != c.where ||
			!strings.Contains(env.Details.Errors[0].Message, c.says) {
			t.Errorf("%.60s: %d %s; want 422 at %s: %s", c.body, r.Status, r.Body, c.where, c.says)
		}
		if strings.Contains(r.Body, "script") || strings.Contains(r.Body, "yyy") || len(r.Body) > 1024 {
			t.Errorf("%.60s: the answer repeats the body: %s", c.body, r.Body)
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
	if ingestOp.Responses["503"] == nil || !strings.Contains(ingestOp.Description, "their lengths to 10 MiB (10485760 bytes) for one caller, and the bytes that have arrived to 40 MiB (41943040 bytes) for all") ||
		!strings.Contains(ingestOp.Description, "at most 8 MiB (8388608 bytes), that many bytes included") {
		t.Fatalf("ingest: 503 %v, description %q", ingestOp.Responses["503"], ingestOp.Description)
	}
	if strings.Contains(login.Description, "in flight") {
		t.Fatalf("login: %q", login.Description)
	}
}

// bodyServer serves the whole API, memory included, with bodies as the
// bytes-in-flight bounds, and returns ada's session cookie.
func bodyServer(t *testing.T, bodies api.BodyBudget) (*api.Server, *live, *auth.Service, string) {
	t.Helper()
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub)})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, Bodies: bodies}, apitest.Streams(streams.Config{Hub: hub}))
	s := l.Server
	return s, l, svc, l.Login("ada", "correct horse battery").Cookie(t)
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

// The ingest operation's MaxBodyBytes is the largest batch it accepts,
// that many bytes included (api's TestBodyLimitIsInclusive checks every
// operation's limit with bodies of spaces).
func TestBatchOfExactlyMaxBodyBytes(t *testing.T) {
	_, l, _, ada := bodyServer(t, api.BodyBudget{})
	batch := validBatch(ingest.MaxBodyBytes)
	if len(batch) != ingest.MaxBodyBytes {
		t.Fatalf("the batch is %d bytes", len(batch))
	}
	l.Post("/api/v1/memory/ingest", "application/json", batch, false, ada).Want(t, http.StatusAccepted, "a valid batch of exactly 8 MiB")
	if r := l.Post("/api/v1/memory/ingest", "application/json", append(batch, '\n'), false, ada); r.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("the same batch and a newline: %d, want 413", r.Status)
	}
}
