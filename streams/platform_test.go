// Tests of the stream plane served whole, over real HTTP, through the
// platform's streams (GET /api/v1/events, GET /api/v1/system/live): the
// caps, the wire format, the takeover and its fallback, panics, the
// shutdown, resuming, slow and stalled clients, deadlines, credentials.

package streams_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/streams"
)

// streamServer serves the whole API with the stream plane sc over real
// HTTP (apitest.Start: a short heartbeat, so tests need not wait, and the
// user ada). opts let a test set the server's timeouts, or serve HTTP/2
// over TLS.
func streamServer(tb testing.TB, sc streams.Config, opts ...apitest.Option) *apitest.Server {
	tb.Helper()
	return apitest.Start(tb, api.Config{}, append(opts, apitest.Streams(sc))...)
}

// rawStream sends GET path with header over a connection of its own,
// closed when the test ends, and returns the connection unread.
func rawStream(tb testing.TB, s *apitest.Server, path, header string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", path, header)
	return conn
}

// adaID is the user id of the session cookie.
func adaID(tb testing.TB, s *apitest.Server, cookie string) string {
	tb.Helper()
	var me struct{ User struct{ ID string } }
	s.Call("GET", "/api/v1/auth/me", nil, cookie).Want(tb, 200, "me").Decode(tb, &me)
	return me.User.ID
}

// The cap: 16 streams across both endpoints, the 17th refused with the
// one 429 before any stream header; another session and an API key each
// have their own 16; a stream the client cancels frees its slot.
func TestStreamCap(t *testing.T) {
	s := streamServer(t, streams.Config{})
	ada := s.Session()
	other := s.Session()
	key := s.Key()

	var open []*apitest.Stream
	for i := range 16 {
		path := []string{"/api/v1/events", "/api/v1/system/live"}[i%2]
		st, r := s.OpenStream(path, ada)
		if st == nil {
			t.Fatalf("stream %d: %d %s", i+1, r.Status, r.Body)
		}
		if got, want := r.Header.Get("RateLimit"), fmt.Sprintf(`"streams";r=%d, "streams-per-user";r=%d, "stream-opens";r=`, 15-i, 63-i); !strings.HasPrefix(got, want) {
			t.Fatalf("stream %d: RateLimit %q, want %q", i+1, got, want)
		}
		if r.Header.Get("Content-Type") != "text/event-stream" || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("stream %d headers: %v", i+1, r.Header)
		}
		open = append(open, st)
	}
	st, r := s.OpenStream("/api/v1/system/live", ada)
	if st != nil || r.Status != 429 {
		t.Fatalf("the 17th stream: %d, want 429", r.Status)
	}
	var env apitest.Refusal
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil || env.Code != "rate-limited" || env.Details.Scope != "stream" ||
		env.Details.Policy != "streams" || env.Details.Limit != 16 || env.Details.RetryAfterS != 5 {
		t.Fatalf("the 17th stream's envelope: %s", r.Body)
	}
	if r.Header.Get("Retry-After") != "5" || r.Header.Get("RateLimit-Policy") != `"streams";q=16;qu="concurrent-requests", "streams-per-user";q=64;qu="concurrent-requests", "stream-opens";q=10000;w=60, "stream-opens-per-user";q=10000;w=60` ||
		r.Header.Get("RateLimit") != `"streams";r=0` || r.Header.Get("X-RateLimit-Remaining") != "0" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("the 17th stream's headers: %v", r.Header)
	}
	for _, who := range []string{other, key} {
		for i := range 16 {
			if st, r := s.OpenStream("/api/v1/events", who); st == nil {
				t.Fatalf("%.20s: stream %d: %d %s", who, i+1, r.Status, r.Body)
			}
		}
	}
	open[3].Close()
	apitest.Eventually(t, time.Second, "a cancelled stream frees its slot", func() bool {
		st, _ := s.OpenStream("/api/v1/events", ada)
		return st != nil
	})
	if _, r := s.OpenStream("/api/v1/events"); r.Status != 401 || r.Header.Get("Content-Type") == "text/event-stream" {
		t.Fatalf("no credentials: %d %v", r.Status, r.Header)
	}
}

// A client whose connection drops without a word frees its slot within a
// heartbeat.
func TestStreamAbruptCloseFreesSlot(t *testing.T) {
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(1)})
	ada := s.Session()
	conn := rawStream(t, s, "/api/v1/events", ada)
	status, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(status, "200") {
		t.Fatalf("raw stream: %q", status)
	}
	if _, r := s.OpenStream("/api/v1/events", ada); r.Status != 429 {
		t.Fatalf("the slot is taken: %d", r.Status)
	}
	conn.(*net.TCPConn).SetLinger(0) // a reset, not a goodbye
	conn.Close()
	apitest.Eventually(t, time.Second, "a dropped connection frees its slot", func() bool {
		st, _ := s.OpenStream("/api/v1/events", ada)
		return st != nil
	})
}

// On HTTP/1.1 a stream's response is what the wire shows: a 200 with the
// stream's headers and no framing of its body, which ends, after
// stream.closing, when the server closes the connection.
func TestStreamWireFormat(t *testing.T) {
	s := streamServer(t, streams.Config{})
	ada := s.Session()
	conn := rawStream(t, s, "/api/v1/events", ada)
	rd := bufio.NewReader(conn)
	res, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Date") == "" ||
		res.Header.Get("X-Request-Id") == "" || !strings.HasPrefix(res.Header.Get("RateLimit"), `"streams";r=15, `) || len(res.TransferEncoding) != 0 || !res.Close {
		t.Fatalf("stream response: %d %v, transfer encoding %v, close %v", res.StatusCode, res.Header, res.TransferEncoding, res.Close)
	}
	first, err := rd.ReadString('\n')
	if err != nil || first != "retry: 3000\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	go s.Streams.CloseStreams(context.Background())
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("the stream did not end with the connection: %v (read %q)", err, rest)
	}
	if !strings.HasSuffix(string(rest), "event: stream.closing\ndata: {\"reason\":\"shutdown\"}\n\n") {
		t.Fatalf("the stream ended with %q", rest)
	}
}

// Where the connection cannot be taken over, as on HTTP/2, a stream is
// served through the ResponseWriter: it starts, carries events, and a
// client that leaves frees its slot.
func TestStreamOverHTTP2(t *testing.T) {
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(1)}, apitest.HTTPServer(func(hs *httptest.Server) { hs.EnableHTTP2 = true }))
	ada := s.Session()
	st, r := s.OpenStream("/api/v1/events", ada)
	if st == nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if st.Response().ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", st.Response().Proto)
	}
	s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "h2"}, ada).Want(t, 201, "create key")
	if m := st.NextEvent(t); m.Event != "apikey.created" || m.ID == "" {
		t.Fatalf("event %+v, want apikey.created with an id", m)
	}
	if _, r := s.OpenStream("/api/v1/events", ada); r.Status != 429 {
		t.Fatalf("the slot is taken: %d", r.Status)
	}
	st.Close()
	apitest.Eventually(t, time.Second, "a stream the client left frees its slot", func() bool {
		st, _ := s.OpenStream("/api/v1/events", ada)
		return st != nil
	})
}

// panicking is a feature with a stream at path whose serve panics, after
// the stream started when started is true.
func panicking(path string, started bool) api.Feature {
	return func(s *api.Server) {
		streams.Add(s, streams.Operation{Operation: huma.Operation{OperationID: "panic" + path, Path: path}, Serve: func(st *streams.Stream) {
			if started && st.Start() != nil {
				return
			}
			panic("a bug in a stream")
		}})
	}
}

// A stream that panics is a bug, not a crash: before it starts, the
// client gets the 500 envelope; after, the stream ends. Either way its
// slot is freed and the server keeps serving.
func TestStreamPanic(t *testing.T) {
	s := apitest.Start(t, api.Config{Features: []api.Feature{panicking("/test/panic-early", false), panicking("/test/panic-late", true)}},
		apitest.Streams(streams.Config{Cap: streams.NewMemoryCap(1)}))
	ada := s.Session()
	for range 2 { // the second time, the slot is free again
		if _, r := s.OpenStream("/test/panic-early", ada); r.Status != 500 || !strings.Contains(r.Body, `"code":"internal"`) {
			t.Fatalf("a panic before the stream started: %d %s", r.Status, r.Body)
		}
		st, r := s.OpenStream("/test/panic-late", ada)
		if st == nil {
			t.Fatalf("a stream that panics once started: %d %s", r.Status, r.Body)
		}
		if _, err := st.Rest(); err != nil {
			t.Fatalf("the stream did not end cleanly: %v", err)
		}
	}
}

// A client that keeps sending bytes after its request is not read
// without bound: its stream ends, and the connection with it.
func TestStreamFloodingClientIsCutOff(t *testing.T) {
	s := streamServer(t, streams.Config{})
	ada := s.Session()
	conn := rawStream(t, s, "/api/v1/events", ada)
	junk := make([]byte, 1<<16)
	var sent int64
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		conn.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := conn.Write(junk)
		sent += int64(n)
	}
	t.Logf("the server took %d MB of junk after the request in 2 s", sent>>20)
	if sent > 16<<20 {
		t.Fatalf("the server read %d MB of junk after the request in 2 s: it reads whatever a client sends, 64 bytes a syscall", sent>>20)
	}
}

// Streams may open and end while CloseStreams waits (requests read as
// the shutdown starts; HEAD opens and ends one): the wait counts them
// safely.
func TestCloseStreamsWhileStreamsOpen(t *testing.T) {
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(1000), UserCap: streams.NewMemoryCap(1000)})
	ada := s.Session()
	k, v, _ := strings.Cut(ada, ": ")
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				req, _ := http.NewRequest("HEAD", s.URL+"/api/v1/events", nil)
				req.Header.Set(k, v)
				if res, err := s.HTTP.Do(req); err == nil {
					res.Body.Close()
				}
			}
		}()
	}
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_ = s.Streams.CloseStreams(ctx)
		cancel()
	}
	stop.Store(true)
	wg.Wait()
}

// routeParam is a feature with a stream at path (with {id}) that, once
// started, sends its id URL parameter as read from its request each time
// a value arrives on poke.
func routeParam(path string, poke chan struct{}) api.Feature {
	return func(s *api.Server) {
		streams.Add(s, streams.Operation{Operation: huma.Operation{OperationID: "param" + path, Path: path},
			Events: []streams.EventType{{Name: "param", Data: ""}}, Serve: func(st *streams.Stream) {
				if st.Start() != nil {
					return
				}
				for range poke {
					b, _ := json.Marshal(chi.URLParam(st.Request(), "id"))
					if st.Send("", "param", b) != nil {
						return
					}
				}
			}})
	}
}

// A stream reads its own path parameters for as long as it lives, though
// chi reuses its route context for other requests once the handler
// returned.
func TestStreamKeepsItsPathParameters(t *testing.T) {
	poke := make(chan struct{})
	s := apitest.Start(t, api.Config{Features: []api.Feature{routeParam("/test/p/{id}", poke)}})
	defer close(poke)
	ada := s.Session()
	st, r := s.OpenStream("/test/p/mine", ada)
	if st == nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	for i := range 50 { // other requests take chi's pooled contexts
		s.Call("GET", "/api/v1/things/00000000-0000-0000-0000-00000000000"+fmt.Sprint(i%10), nil, ada)
	}
	poke <- struct{}{}
	if m := st.NextEvent(t); m.Data != `"mine"` {
		t.Fatalf("the stream's own path parameter now reads %s", m.Data)
	}
}

// Events published while a client was away are replayed after its
// Last-Event-ID, without loss or duplicates; one too old is told so.
func TestStreamResumesAfterLastEventID(t *testing.T) {
	s := streamServer(t, streams.Config{Hub: streams.NewMemoryHub(4, 64)})
	ada := s.Session()
	newKey := func(name string) string {
		var k struct{ ID string }
		s.Call("POST", "/api/v1/apikeys", map[string]string{"name": name}, ada).Want(t, 201, "create key").Decode(t, &k)
		return k.ID
	}
	st, _ := s.OpenStream("/api/v1/events", ada)
	first := newKey("one")
	m := st.NextEvent(t)
	if m.Event != "apikey.created" || !strings.Contains(m.Data, first) || m.ID == "" {
		t.Fatalf("first event: %+v", m)
	}
	st.Close()
	missed := []string{newKey("two"), newKey("three")}
	again, _ := s.OpenStream("/api/v1/events", ada, "Last-Event-ID: "+m.ID)
	for _, id := range missed {
		if m := again.NextEvent(t); m.Event != "apikey.created" || !strings.Contains(m.Data, id) {
			t.Fatalf("replayed %+v, want the creation of %s", m, id)
		}
	}
	live := newKey("four") // live, after the replay: once, not twice
	if m := again.NextEvent(t); !strings.Contains(m.Data, live) {
		t.Fatalf("after the replay: %+v", m)
	}
	again.Close()
	for i := range 5 { // the hub keeps 4: the first event's successors are partly gone
		newKey(fmt.Sprint("more", i))
	}
	late, _ := s.OpenStream("/api/v1/events", ada, "Last-Event-ID: "+m.ID)
	if g := late.NextEvent(t); g.Event != "stream.gap" || g.Data != `{"after":"`+m.ID+`"}` {
		t.Fatalf("a resume from an id no longer kept starts with %+v, want stream.gap", g)
	}
	if _, r := s.OpenStream("/api/v1/events", ada, "Last-Event-ID: "+strings.Repeat("9", 300)); r.Status != 422 {
		t.Fatalf("a Last-Event-ID this API never gave: %d %s", r.Status, r.Body)
	}
}

// A client that stops reading is dropped with stream.closing (slow) once
// its buffer is full; a fast one on the same hub gets every event, and
// publishing never waits for either.
func TestStreamSlowReaderDoesNotSlowOthers(t *testing.T) {
	hub := streams.NewMemoryHub(16, 8)
	s := streamServer(t, streams.Config{Hub: hub, Heartbeat: time.Hour})
	ada := s.Session()
	user := adaID(t, s, ada)
	slow, _ := s.OpenStream("/api/v1/events", ada)
	fast, _ := s.OpenStream("/api/v1/events", ada)
	big := json.RawMessage(`{"id":"` + strings.Repeat("x", 256<<10) + `"}`)
	const n = 100 // 25 MB: more than the socket buffers of the slow stream hold
	var slowest time.Duration
	for i := range n {
		start := time.Now()
		if _, err := hub.Publish(context.Background(), streams.Event{Type: "apikey.deleted", To: user, Data: big}); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(start))
		if m := fast.NextEvent(t); m.Event != "apikey.deleted" {
			t.Fatalf("the fast stream's event %d: %s", i+1, m.Event)
		}
	}
	// A Publish held by the slow reader would wait for its write deadline,
	// two heartbeats (2 h); 10 s is for a loaded machine.
	if slowest > 10*time.Second {
		t.Errorf("a Publish took %v: a slow reader held the publisher", slowest)
	}
	for { // the slow stream, read at last: what was buffered, then why it ended
		m := slow.NextEvent(t)
		if m.Event == "stream.closing" {
			if m.Data != `{"reason":"slow"}` {
				t.Fatalf("closing: %s", m.Data)
			}
			break
		}
	}
}

// A shutdown ends every stream with stream.closing and frees its slot.
func TestStreamShutdown(t *testing.T) {
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(2)})
	ada := s.Session()
	a, _ := s.OpenStream("/api/v1/events", ada)
	b, _ := s.OpenStream("/api/v1/system/live", ada)
	s.Streams.CloseStreams(context.Background())
	for _, st := range []*apitest.Stream{a, b} {
		for {
			m := st.NextEvent(t)
			if m.Event == "stream.closing" {
				if m.Data != `{"reason":"shutdown"}` {
					t.Fatalf("closing: %s", m.Data)
				}
				break
			}
		}
	}
}

// The server's read and write timeouts do not cut a healthy stream: it
// moves its own deadlines, heartbeat by heartbeat.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	s := streamServer(t, streams.Config{Heartbeat: 50 * time.Millisecond}, apitest.HTTPServer(func(hs *httptest.Server) {
		hs.Config.ReadTimeout, hs.Config.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond
	}))
	ada := s.Session()
	st, r := s.OpenStream("/api/v1/system/live", ada)
	if st == nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(1200 * time.Millisecond)
	snapshots := 0
	for time.Now().Before(deadline) {
		if m := st.Next(t); m.Event == "system.live" {
			snapshots++
		}
	}
	if snapshots == 0 {
		t.Fatal("no snapshot in 1.2 s")
	}
}

// HEAD answers the headers a stream would start with, and holds no slot.
func TestStreamHead(t *testing.T) {
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(1)})
	ada := s.Session()
	for range 3 {
		r := s.Call("HEAD", "/api/v1/events", nil, ada)
		// A HEAD that streamed would not end until the client gave up; 10 s is
		// room for a loaded machine.
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/event-stream" || r.Took > 10*time.Second {
			t.Fatalf("HEAD: %d %v in %v", r.Status, r.Header, r.Took)
		}
	}
	if st, r := s.OpenStream("/api/v1/events", ada); st == nil {
		t.Fatalf("after three HEADs the one slot is free: %d %s", r.Status, r.Body)
	}
}

// A stream whose credentials stop holding — its API key deleted, its
// session logged out — ends within a heartbeat with stream.closing.
func TestStreamEndsWithItsCredentials(t *testing.T) {
	s := streamServer(t, streams.Config{})
	ada := s.Session()
	var k struct{ ID, Key string }
	s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "doomed"}, ada).Want(t, 201, "create").Decode(t, &k)
	byKey, _ := s.OpenStream("/api/v1/system/live", "X-API-Key: "+k.Key)
	other := s.Session()
	bySession, _ := s.OpenStream("/api/v1/system/live", other)
	s.Call("DELETE", "/api/v1/apikeys/"+k.ID, nil, ada).Want(t, 204, "delete the key")
	s.Call("POST", "/api/v1/auth/logout", nil, other).Want(t, 204, "log out")
	for _, st := range []*apitest.Stream{byKey, bySession} {
		for m := st.NextEvent(t); m.Event != "stream.closing"; m = st.NextEvent(t) {
		}
	}
	// ada's own session is untouched.
	if st, r := s.OpenStream("/api/v1/events", ada); st == nil {
		t.Fatalf("ada's session: %d %s", r.Status, r.Body)
	}
}

// Data with line breaks (pretty-printed JSON) goes out on one data: line:
// it cannot end the message early or inject fields.
func TestStreamDataWithLineBreaks(t *testing.T) {
	hub := streams.NewMemoryHub(16, 16)
	s := streamServer(t, streams.Config{Hub: hub})
	ada := s.Session()
	st, _ := s.OpenStream("/api/v1/events", ada)
	data, _ := json.MarshalIndent(map[string]string{"id": "x\ny", "event": "injected"}, "", "  ")
	if _, err := hub.Publish(context.Background(), streams.Event{Type: "apikey.deleted", To: adaID(t, s, ada), Data: data}); err != nil {
		t.Fatal(err)
	}
	if m := st.NextEvent(t); m.Event != "apikey.deleted" || m.Data != `{"event":"injected","id":"x\ny"}` {
		t.Fatalf("got %+v", m)
	}
}

// A client that stops taking data — its receive window full, or its host
// gone — frees its slot within a few heartbeats, though the kernel still
// buffers what the stream writes. So it does when the connection is
// connlimit's, which wraps the socket the kernel is asked about.
func TestStreamStalledClientFreesSlot(t *testing.T) {
	for _, viaConnlimit := range []bool{false, true} {
		t.Run(fmt.Sprintf("connlimit=%v", viaConnlimit), func(t *testing.T) { testStreamStalledClientFreesSlot(t, viaConnlimit) })
	}
}

func testStreamStalledClientFreesSlot(t *testing.T, viaConnlimit bool) {
	hub := streams.NewMemoryHub(16, 16)
	s := streamServer(t, streams.Config{Cap: streams.NewMemoryCap(1), Hub: hub, Heartbeat: 50 * time.Millisecond})
	addr := strings.TrimPrefix(s.URL, "http://")
	if viaConnlimit { // the same handler, served by a connlimit.Limiter
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: s.Server}
		go connlimit.New(connlimit.Config{Max: 100, MaxPerIP: 100}).Serve(srv, ln)
		t.Cleanup(func() { srv.Close() })
		addr = ln.Addr().String()
	}
	ada := s.Session()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096) // a small window, which the client then stops reading
	fmt.Fprintf(conn, "GET /api/v1/events HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", ada)
	if status, _ := bufio.NewReaderSize(conn, 16).ReadString('\n'); !strings.Contains(status, "200") {
		t.Fatalf("raw stream: %q", status)
	}
	// Far more than the client's window, far less than the server's send
	// buffer: the write succeeds, and the bytes wait in the kernel.
	big := json.RawMessage(`{"id":"` + strings.Repeat("x", 48<<10) + `"}`)
	if _, err := hub.Publish(context.Background(), streams.Event{Type: "apikey.deleted", To: adaID(t, s, ada), Data: big}); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 2*time.Second, "a stalled client's slot frees", func() bool {
		st, _ := s.OpenStream("/api/v1/events", ada)
		return st != nil
	})
}

// Credentials come first: a request without them gets 401, whatever its
// Last-Event-ID.
func TestStreamChecksCallerFirst(t *testing.T) {
	s := streamServer(t, streams.Config{})
	if _, r := s.OpenStream("/api/v1/events", "Last-Event-ID: nonsense"); r.Status != 401 {
		t.Fatalf("no credentials, a bad Last-Event-ID: %d %s", r.Status, r.Body)
	}
}
