package main

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// Three replicas on one PostgreSQL and a Redis Cluster, behind haproxy
// with BRAIN_TRUSTED_PROXIES naming it, are one service to their clients:
// each new connection goes to the next replica, and still the per-IP
// budget admits exactly its burst, a session works everywhere, the 17th
// stream is refused, a stream outlives the balancer's idle timeout on its
// heartbeats, an ingest accepted by one replica is processed once and its
// events reach streams held on every replica, and a revoked key stops on
// every replica within the documented 10 s. Then every master of the
// cluster fails over to its replica under load, which costs no 5xx (the
// default outage policy, local, decides on each replica meanwhile), and
// after it the per-IP budget is exact again. The login back-off counts a
// username's failures, and an address's, across the replicas.
func TestReplicasBehindABalancer(t *testing.T) {
	cluster := redistest.StartCluster(t)
	env := memoryEnv(replicaEnv(storetest.URL(t, store.Postgres), cluster.URL(), "127.0.0.1/32", adminPassword))
	maps.Copy(env, map[string]string{ // what compose.yaml leaves at its defaults, set for this test
		"BRAIN_REDIS_PREFIX":     redistest.Prefix(t),
		"BRAIN_RATE_LIMIT_IP":    "20/h,burst=20", // nothing refills during the test
		"BRAIN_REDIS_TIMEOUT":    "2s",            // a loaded machine's Redis round trip is no store failure
		"BRAIN_STREAM_HEARTBEAT": "300ms",
	})
	var procs []*proc
	var backends []string
	for range balancerReplicas { // one after another: the first migrates and creates admin
		kv := map[string]string{}
		for k, v := range env {
			kv[k] = v
		}
		p := startProc(t, kv)
		procs = append(procs, p)
		backends = append(backends, p.base)
	}
	lb := client{t, startBalancer(t, backends, balancerIdle)}
	// call sends each request on a connection of its own, so the balancer
	// picks the next replica for it.
	call := func(method, path string, body any, headers ...string) response {
		t.Helper()
		return lb.do(method, path, body, append(headers, "Connection: close")...)
	}
	// served counts each replica's access lines of route, once they add up
	// to total (a replica's log reaches its output a moment late).
	served := func(route string, total int) (per []int) {
		var sum int
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			per, sum = nil, 0
			for _, p := range procs {
				n := strings.Count(p.logs.String(), "route="+route+" ")
				per, sum = append(per, n), sum+n
			}
			if sum >= total || time.Now().After(deadline) {
				return per
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cookie, _ := sessionCookieOf(t, call("POST", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPassword}).want(t, 200, "admin login"))
	for range 6 { // the session works on every replica
		call("GET", "/api/v1/auth/me", nil, cookie).want(t, 200, "me by session")
	}

	// 16 streams spread over the replicas; the 17th is refused.
	s := session{lb, cookie}
	var streams []<-chan sseEvent
	for range 16 {
		streams = append(streams, follow(t, s, "/api/v1/events"))
	}
	refused := call("GET", "/api/v1/events", nil, cookie)
	if refused.status != http.StatusTooManyRequests || refused.header.Get("Retry-After") == "" {
		t.Fatalf("the 17th stream: %d %s, want 429 with Retry-After", refused.status, refused.raw)
	}
	if per := served("/api/v1/events", 17); per[0] < 5 || per[1] < 5 || per[2] < 5 {
		t.Fatalf("streams and refusals per replica: %v, want them spread", per)
	}

	// Past the balancer's idle timeout, the streams still deliver: an
	// ingest accepted by one replica reaches every one of them.
	time.Sleep(balancerIdle + time.Second) // what is tested is the passing of real time
	id := s.accepted(s.ingest(map[string]any{"project": "balanced", "items": []map[string]any{{"text": "a heron by the weir"}}}), false)
	for i, events := range streams {
		deadline := time.After(serverWork)
		for done := false; !done; {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("stream %d ended (the balancer's idle timeout?) before job %s succeeded", i, id)
				}
				done = ev.Type == "job.succeeded" && strings.Contains(ev.Data, id)
			case <-deadline:
				t.Fatalf("stream %d did not see job %s succeed within %v", i, id, serverWork)
			}
		}
	}
	if j := s.waitJob(id, serverWork); j.ItemsTotal != 1 {
		t.Fatalf("job %s: %+v, want 1 item", id, j)
	}
	if again := s.ingest(map[string]any{"project": "balanced", "items": []map[string]any{{"text": "a heron by the weir"}}}); s.accepted(again, true) != id {
		t.Fatalf("the same batch again answered %s, want job %s", again.raw, id)
	}

	// A key revoked on one replica stops on all within 10 s.
	created := call("POST", "/api/v1/apikeys", map[string]string{"name": "balanced"}, cookie).want(t, 201, "create key")
	key := "X-API-Key: " + created.str("key")
	for range 6 { // every replica has it cached
		call("GET", "/api/v1/auth/me", nil, key).want(t, 200, "me by key")
	}
	call("DELETE", "/api/v1/apikeys/"+created.str("id"), nil, cookie).want(t, 204, "revoke")
	revoked := time.Now()
	for {
		sent, ok := time.Now(), 0
		for range 3 { // a refusal is 401, or once this client's failures spend its ip budget, 429
			r := call("GET", "/api/v1/auth/me", nil, key)
			if r.status == http.StatusUnauthorized || r.status == http.StatusTooManyRequests && r.str("details", "scope") == "ip" {
				ok++
			}
		}
		if ok == 3 {
			break
		}
		if sent.Sub(revoked) > 10*time.Second+time.Second { // sent past the cache's 10 s, and a second of slack
			t.Fatalf("a revoked key still works on a replica %v after", sent.Sub(revoked))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the revoked key stopped on every replica within %v", time.Since(revoked).Round(time.Millisecond))

	// Load through the balancer while each master fails over, and then
	// while 2,000 slots move between masters: reads by session and by
	// key, and ingests, each request limited in Redis.
	key = "X-API-Key: " + call("POST", "/api/v1/apikeys", map[string]string{"name": "load"}, cookie).want(t, 201, "create key").str("key")
	var statuses sync.Map // status: *atomic.Int64
	count := func(status int) {
		n, _ := statuses.LoadOrStore(status, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	stop := make(chan struct{})
	var load sync.WaitGroup
	for g := range 6 {
		load.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch {
				case g == 0:
					count(s.ingest(map[string]any{"project": "failover", "items": []map[string]any{{"text": fmt.Sprint("note ", i)}}}).status)
				case g%2 == 1:
					count(lb.do("GET", "/api/v1/auth/me", nil, cookie).status)
				default:
					count(lb.do("GET", "/api/v1/auth/me", nil, key).status)
				}
			}
		})
	}
	for _, m := range cluster.Masters() {
		cluster.Failover(m)
	}
	masters := cluster.Masters()
	cluster.Reshard(masters[0], masters[1], 2000)
	close(stop)
	load.Wait()
	total, errors := int64(0), int64(0)
	statuses.Range(func(k, v any) bool {
		n := v.(*atomic.Int64).Load()
		total += n
		if k.(int) >= 500 {
			errors += n
		}
		return true
	})
	var all []string
	statuses.Range(func(k, v any) bool { all = append(all, fmt.Sprint(k, ": ", v.(*atomic.Int64).Load())); return true })
	if errors > 0 || total < 100 {
		t.Fatalf("under load through three failovers and a slot migration: %d requests, %d of them 5xx (%v); want many, and none", total, errors, all)
	}
	t.Logf("%d requests through three failovers and a 2,000-slot migration, no 5xx: %v", total, all)

	// The login back-off is shared too. One username's first 429 comes
	// after exactly its 5 failures (the spec's failures), each from an
	// address of its own and served by whichever replica. The back-off
	// then waits 1 s from the latest failure's start; the next attempt is
	// sent at once, and a login takes a small part of that second.
	wrong := func(username, ip string) response {
		t.Helper()
		return call("POST", "/api/v1/auth/login", map[string]string{"username": username, "password": "not the password"}, "X-Forwarded-For: "+ip)
	}
	backedOff := func(r response, since time.Time, what string) {
		t.Helper()
		if r.status != http.StatusTooManyRequests || r.str("details", "scope") != "login" {
			t.Fatalf("%s: %d %s (%v after the last failure was sent), want 429 scope login", what, r.status, r.raw, time.Since(since).Round(time.Millisecond))
		}
	}
	var sent time.Time
	for i := range 5 {
		sent = time.Now()
		wrong("grace", fmt.Sprint("198.51.100.", i+1)).want(t, 401, fmt.Sprintf("grace's failure %d", i+1))
	}
	backedOff(wrong("grace", "198.51.100.6"), sent, "grace's 6th attempt")
	// One address's 20 failures (ip_failures), over 20 usernames: its
	// 21st attempt is backed off, before the ip budget (burst 20). That
	// budget is exact across replicas again after the failovers: the 20
	// logins spent it, and the address's next request that draws from it
	// is refused.
	for i := range 20 {
		sent = time.Now()
		wrong(fmt.Sprint("user", i), "203.0.113.7").want(t, 401, fmt.Sprintf("failure %d from one address", i+1))
	}
	backedOff(wrong("user20", "203.0.113.7"), sent, "the 21st attempt from one address")
	if r := call("GET", "/api/v1/auth/me", nil, "X-Forwarded-For: 203.0.113.7"); r.status != http.StatusTooManyRequests || r.str("details", "scope") != "ip" {
		t.Fatalf("a 401 from the address whose logins spent its burst of 20: %d %s, want 429 scope ip", r.status, r.raw)
	}
	if per := served("/api/v1/auth/login", 28); per[0] < 6 || per[1] < 6 || per[2] < 6 {
		t.Fatalf("logins served per replica: %v, want them spread", per)
	}
}
