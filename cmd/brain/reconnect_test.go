package main

import (
	"bufio"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// A client at its cap of 16 streams that closes one and reconnects at
// once, with or without Last-Event-ID, is admitted, behind haproxy as
// directly, and 16 live streams still refuse the 17th. haproxy keeps a
// replica's side of a stream whose client closed open until a write to
// that client fails, the second after the close; with heartbeats alone
// that is one to two heartbeats later. The heartbeat here (a minute) is
// longer than the test, so no heartbeat frees a slot in it. Two replicas
// share one Redis, so a stream and the reconnection that replaces it may
// fall on different replicas; the test checks that both cases happened.
func TestAClosedStreamFreesItsSlotForItsReconnection(t *testing.T) {
	env := map[string]string{
		"BRAIN_DATABASE_URL":       storetest.URL(t, store.Postgres),
		"BRAIN_REDIS_URL":          redistest.URL(t),
		"BRAIN_REDIS_PREFIX":       redistest.Prefix(t),
		"BRAIN_STREAM_HEARTBEAT":   "1m",
		"BRAIN_ADMIN_PASSWORD":     adminPassword,
		"BRAIN_COOKIE_SECURE":      "false",
		"BRAIN_RATE_LIMIT_SESSION": "10000/s,burst=10000",
	}
	procs := []*proc{startProc(t, maps.Clone(env))} // one after the other: the first migrates and creates admin
	procs = append(procs, startProc(t, maps.Clone(env)))
	lb := startBalancer(t, []string{procs[0].base, procs[1].base}, 2*time.Minute)
	// replicaOf is the replica that served res: whose log has its request
	// id (a replica's log reaches its output a moment late).
	replicaOf := func(res *http.Response) int {
		t.Helper()
		for deadline := time.Now().Add(serverWork); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for i, p := range procs {
				if strings.Contains(p.logs.String(), "request_id="+res.Header.Get("X-Request-Id")) {
					return i
				}
			}
		}
		t.Fatalf("no replica logged request %s within %v", res.Header.Get("X-Request-Id"), serverWork)
		return -1
	}
	var moved, stayed int // reconnections on another replica than their stream, and on its own
	for _, base := range []string{lb, procs[0].base} {
		c := client{t, base}
		cookie, _ := sessionCookieOf(t, login(c, "admin", adminPassword).want(t, 200, "login"))
		var open []*http.Response
		for i := range 16 {
			res := openEvents(t, base, cookie, "")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: stream %d: %s", base, i+1, res.Status)
			}
			open = append(open, res)
		}
		c.do("POST", "/api/v1/apikeys", map[string]string{"name": "an event to resume after"}, cookie).want(t, 201, "create a key")
		for round := range 4 {
			last := ""
			if round%2 == 1 {
				last = nextEventID(t, open[round])
			}
			open[round].Body.Close()
			res := openEvents(t, base, cookie, last)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: a client at its cap closed a stream and reconnected at once (Last-Event-ID %q): %s, want 200", base, last, res.Status)
			}
			if base == lb && replicaOf(res) != replicaOf(open[round]) {
				moved++
			} else if base == lb {
				stayed++
			}
			open[round] = res
			if round == 1 { // one request more: the rounds after it fall on the balancer's other turn
				if res := openEvents(t, base, cookie, ""); res.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("%s: the 17th live stream: %s, want 429", base, res.Status)
				}
			}
		}
		if res := openEvents(t, base, cookie, ""); res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: the 17th live stream: %s, want 429", base, res.Status)
		}
	}
	if moved == 0 || stayed == 0 {
		t.Fatalf("through the balancer, %d reconnections fell on another replica than their stream and %d on the same: want both cases", moved, stayed)
	}
	t.Logf("through the balancer, %d reconnections fell on another replica than their stream, %d on the same", moved, stayed)
}

// openEvents opens GET /api/v1/events at base with cookie, and
// Last-Event-ID unless lastEventID is "". Its body is closed when the
// test ends.
func openEvents(t *testing.T, base, cookie, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/api/v1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := strings.Cut(cookie, ": ")
	req.Header.Set(k, v)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// nextEventID reads res's stream until an event's id, and returns it.
func nextEventID(t *testing.T, res *http.Response) string {
	t.Helper()
	id := make(chan string, 1)
	go func() {
		defer close(id)
		for sc := bufio.NewScanner(res.Body); sc.Scan(); {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id <- v
				return
			}
		}
	}()
	select {
	case v, ok := <-id:
		if !ok {
			t.Fatal("the stream ended before an event with an id")
		}
		return v
	case <-time.After(serverWork):
		t.Fatalf("no event with an id within %v", serverWork)
	}
	return ""
}
