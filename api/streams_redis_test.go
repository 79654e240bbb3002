package api_test

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/streams"
	"github.com/redis/rueidis"
)

// replica is one brain of a cluster: its own Redis client, cap and hub
// over the Redis the cluster shares, on the auth service they share.
type replica struct {
	*live
	client rueidis.Client
	server *httptest.Server
}

// newReplica starts a replica whose stream slots last lease unless its
// heartbeat renews them, with a budget of opens no test meets. A Redis
// failure of its caps fails the test, unless the test expects them (it
// kills the replica).
func newReplica(t *testing.T, svc *auth.Service, prefix string, lease time.Duration, failures *atomic.Bool) *replica {
	t.Helper()
	return newReplicaWith(t, svc, prefix, lease, failures, replicaOptions{userCap: api.DefaultStreamUserCap,
		opens: ratelimit.Budget{Limit: 10_000, Window: time.Minute, Burst: 10_000}})
}

// replicaOptions are what a test of the stream plane's limits sets.
type replicaOptions struct {
	userCap int
	opens   ratelimit.Budget
	now     func() time.Time // the open budget's clock, in Redis (nil: Redis's)
}

// newReplicaWith is newReplica with a per-user cap and an open budget of
// the test's, both in the Redis the cluster shares.
func newReplicaWith(t *testing.T, svc *auth.Service, prefix string, lease time.Duration, failures *atomic.Bool, o replicaOptions) *replica {
	t.Helper()
	client := redistest.Client(t, redistest.Option(t))
	redisCap := func(max int) *streams.RedisCap {
		cp := streams.NewRedisCap(client, prefix, max, lease, nil)
		cp.Timeout = time.Second // Redis is up: a loaded machine must not look like an outage
		cp.OnError = func(err error) {
			if !failures.Load() {
				t.Errorf("the cap failed in Redis: %v", err)
			}
		}
		return cp
	}
	hub := streams.NewRedisHub(client, prefix, 1000, 64)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	limits := api.DefaultLimits()
	limits.Session = ratelimit.Budget{Limit: 10_000, Window: time.Minute, Burst: 10_000}
	limits.StreamOpens = o.opens
	limits.Store = func(p ratelimit.Policy) ratelimit.Limiter {
		r := ratelimit.NewRedis(client, prefix+"rl:", p)
		r.Now = o.now
		return r
	}
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: limits,
		Streams: api.StreamConfig{Cap: redisCap(api.DefaultStreamCap), UserCap: redisCap(o.userCap), Hub: hub, Heartbeat: lease / 5}})
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.CloseStreams(context.Background()); hs.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &replica{live: &live{tb: t, url: hs.URL, client: &http.Client{Transport: tr}}, client: client, server: hs}
}

// Two replicas sharing the real Redis hold one cap of 16 between them and
// deliver each other's events; the slots of a replica that dies expire
// with their leases.
func TestStreamsAcrossReplicas(t *testing.T) {
	svc := MustAuth(t)
	prefix := redistest.Prefix()
	const lease = 600 * time.Millisecond
	var aDead, bDead atomic.Bool
	a, b := newReplica(t, svc, prefix, lease, &aDead), newReplica(t, svc, prefix, lease, &bDead)
	ada := a.login("ada", "correct horse battery").cookie(t)

	var onB []*sse
	for i := range api.DefaultStreamCap {
		r := []*replica{a, b}[i%2]
		st, rep := r.openStream("/api/v1/events", ada)
		if st == nil {
			t.Fatalf("stream %d: %d %s", i+1, rep.status, rep.body)
		}
		if r == b {
			onB = append(onB, st)
		}
	}
	for _, r := range []*replica{a, b} {
		if _, rep := r.openStream("/api/v1/system/live", ada); rep.status != 429 || !strings.Contains(rep.body, `"scope":"stream"`) {
			t.Fatalf("the 17th stream of the cluster: %d %s", rep.status, rep.body)
		}
	}

	// An event published on a reaches the streams on b.
	var k struct{ ID string }
	a.call("POST", "/api/v1/apikeys", map[string]string{"name": "cluster"}, ada).want(t, 201, "create a key on a").decode(t, &k)
	if m := onB[0].nextEvent(t); m.event != "apikey.created" || !strings.Contains(m.data, k.ID) {
		t.Fatalf("b's stream got %+v, want a's apikey.created", m)
	}

	// a dies: its Redis connection first, so its streams cannot release
	// their slots, then its server. Its 8 slots stay taken until their
	// leases end; b's, renewed by b's heartbeats, stay.
	aDead.Store(true)
	a.client.Close()
	a.server.CloseClientConnections()
	if _, rep := b.openStream("/api/v1/events", ada); rep.status != 429 {
		t.Fatalf("right after a died: %d, want 429 (its slots are still leased)", rep.status)
	}
	freed := 0
	eventually(t, 3*lease, "a dead replica's 8 slots expire", func() bool {
		if st, _ := b.openStream("/api/v1/events", ada); st != nil {
			freed++
		}
		return freed == 8
	})
	if _, rep := b.openStream("/api/v1/events", ada); rep.status != 429 {
		t.Fatalf("b's own 8 are still held, so the 17th is refused: got %d", rep.status)
	}
}

// Two replicas sharing the real Redis share each caller's open budget
// and each user's cap: the 21st open of a session is refused on either
// (the true wait, 1 s, as the budget's clock says), and a user's streams
// over both replicas and two keys stop at its cap, until one ends.
func TestStreamLimitsAcrossReplicas(t *testing.T) {
	svc := MustAuth(t)
	prefix := redistest.Prefix()
	clk := testclock.New(t0)
	var never atomic.Bool
	o := replicaOptions{userCap: 20, opens: api.DefaultLimits().StreamOpens, now: clk.Now}
	a, b := newReplicaWith(t, svc, prefix, time.Minute, &never, o), newReplicaWith(t, svc, prefix, time.Minute, &never, o)
	ada := a.login("ada", "correct horse battery").cookie(t)

	for i := range 20 { // HEAD draws an open and holds no slot
		if r := []*replica{a, b}[i%2].call("HEAD", "/api/v1/events", nil, ada); r.status != 200 {
			t.Fatalf("open %d of the burst: %d", i+1, r.status)
		}
	}
	for _, r := range []*replica{a, b} {
		_, rep := r.openStream("/api/v1/events", ada)
		refusedBy(t, rep, "stream-opens", 60, 60, 1)
	}

	keys := []string{"X-API-Key: " + mustKey(t, svc), "X-API-Key: " + mustKey(t, svc)}
	var first *sse
	for i := range 16 { // the first key's cap, over both replicas
		st, rep := []*replica{a, b}[i%2].openStream("/api/v1/events", keys[0])
		if st == nil {
			t.Fatalf("key 1, stream %d: %d %s", i+1, rep.status, rep.body)
		}
		first = cmp.Or(first, st)
	}
	for i := range 4 {
		if st, rep := []*replica{a, b}[i%2].openStream("/api/v1/events", keys[1]); st == nil {
			t.Fatalf("key 2, stream %d: %d %s", i+1, rep.status, rep.body)
		}
	}
	for _, r := range []*replica{a, b} { // 20: the user's cap
		_, rep := r.openStream("/api/v1/events", keys[1])
		refusedBy(t, rep, "streams-per-user", 20, 0, 5)
	}
	first.close() // on a
	eventually(t, 2*time.Second, "a stream that ended on a frees its user's place on b", func() bool {
		st, _ := b.openStream("/api/v1/events", keys[1])
		return st != nil
	})
}
