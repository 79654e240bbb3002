// Tests of the stream plane across replicas that share the real Redis:
// one cap between them, each other's events, the slots of a replica that
// dies, and a Redis cut.

package streams_test

import (
	"cmp"
	"context"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// replica is one brain of a cluster: its own Redis client, cap and hub
// over the Redis the cluster shares, on the auth service they share.
type replica struct {
	*apitest.Server
	client rueidis.Client
	server *httptest.Server
}

// cluster is the auth service the replicas of a test share, on its
// database, with the user ada.
func cluster(t *testing.T) (*auth.Service, *store.DB) {
	t.Helper()
	db := apitest.OpenDB(t)
	return apitest.NewAuth(t, db), db
}

// newReplica starts a replica whose stream slots last lease unless its
// heartbeat renews them, with a budget of opens no test meets. A Redis
// failure of its caps fails the test, unless the test expects them (it
// kills the replica).
func newReplica(t *testing.T, svc *auth.Service, db *store.DB, prefix string, lease time.Duration, failures *atomic.Bool) *replica {
	t.Helper()
	return newReplicaWith(t, svc, db, prefix, lease, failures, replicaOptions{userCap: streams.DefaultUserCap,
		opens: ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}})
}

// replicaOptions are what a test of the stream plane's limits sets.
type replicaOptions struct {
	userCap          int
	opens, userOpens ratelimit.Rate   // userOpens 0: one no test meets
	now              func() time.Time // the open budgets' clock, in Redis (nil: Redis's)
}

// newReplicaWith is newReplica with a per-user cap and an open budget of
// the test's, both in the Redis the cluster shares.
func newReplicaWith(t *testing.T, svc *auth.Service, db *store.DB, prefix string, lease time.Duration, failures *atomic.Bool, o replicaOptions) *replica {
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
	limits.Session = ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}
	limits.StreamOpens, limits.StreamUserOpens = o.opens, o.userOpens
	limits.Store = func(p ratelimit.Budget) ratelimit.Limiter {
		r := ratelimit.NewRedis(client, prefix+"rl:", p)
		r.Now = o.now
		return r
	}
	var hs *httptest.Server
	s := apitest.Start(t, api.Config{Auth: svc, Limits: limits},
		apitest.Streams(streams.Config{Cap: redisCap(streams.DefaultCap), UserCap: redisCap(o.userCap), Hub: hub, Heartbeat: lease / 5}),
		apitest.HTTPServer(func(s *httptest.Server) { hs = s }))
	return &replica{Server: s, client: client, server: hs}
}

// Two replicas sharing the real Redis hold one cap of 16 between them and
// deliver each other's events; the slots of a replica that dies expire
// with their leases.
func TestStreamsAcrossReplicas(t *testing.T) {
	svc, db := cluster(t)
	prefix := redistest.Prefix(t)
	// A lease outlives by far a refused open's wait for its probe (half
	// a second), which comes before "right after a died" is checked.
	const lease = 2 * time.Second
	var aDead, bDead atomic.Bool
	a, b := newReplica(t, svc, db, prefix, lease, &aDead), newReplica(t, svc, db, prefix, lease, &bDead)
	ada := a.Session()

	var onB []*apitest.Stream
	for i := range streams.DefaultCap {
		r := []*replica{a, b}[i%2]
		st, rep := r.OpenStream("/api/v1/events", ada)
		if st == nil {
			t.Fatalf("stream %d: %d %s", i+1, rep.Status, rep.Body)
		}
		if r == b {
			onB = append(onB, st)
		}
	}
	for _, r := range []*replica{a, b} {
		if _, rep := r.OpenStream("/api/v1/system/live", ada); rep.Status != 429 || !strings.Contains(rep.Body, `"scope":"stream"`) {
			t.Fatalf("the 17th stream of the cluster: %d %s", rep.Status, rep.Body)
		}
	}

	// An event published on a reaches the streams on b.
	var k struct{ ID string }
	a.Call("POST", "/api/v1/apikeys", map[string]string{"name": "cluster"}, ada).Want(t, 201, "create a key on a").Decode(t, &k)
	if m := onB[0].NextEvent(t); m.Event != "apikey.created" || !strings.Contains(m.Data, k.ID) {
		t.Fatalf("b's stream got %+v, want a's apikey.created", m)
	}

	// a dies: its Redis connection first, so its streams cannot release
	// their slots, then its server. Its 8 slots stay taken until their
	// leases end; b's, renewed by b's heartbeats, stay.
	aDead.Store(true)
	a.client.Close()
	a.server.CloseClientConnections()
	if _, rep := b.OpenStream("/api/v1/events", ada); rep.Status != 429 {
		t.Fatalf("right after a died: %d, want 429 (its slots are still leased)", rep.Status)
	}
	freed := 0
	apitest.Eventually(t, 3*lease, "a dead replica's 8 slots expire", func() bool {
		if st, _ := b.OpenStream("/api/v1/events", ada); st != nil {
			freed++
		}
		return freed == 8
	})
	if _, rep := b.OpenStream("/api/v1/events", ada); rep.Status != 429 {
		t.Fatalf("b's own 8 are still held, so the 17th is refused: got %d", rep.Status)
	}
}

// Two replicas sharing the real Redis share each caller's open budget
// and each user's cap: the 21st open of a session is refused on either
// (the true wait, 1 s, as the budget's clock says), and a user's streams
// over both replicas and two keys stop at its cap, until one ends.
func TestStreamLimitsAcrossReplicas(t *testing.T) {
	svc, db := cluster(t)
	prefix := redistest.Prefix(t)
	clk := testclock.New(t0)
	var never atomic.Bool
	o := replicaOptions{userCap: 20, opens: api.DefaultLimits().StreamOpens, now: clk.Now}
	a, b := newReplicaWith(t, svc, db, prefix, time.Minute, &never, o), newReplicaWith(t, svc, db, prefix, time.Minute, &never, o)
	ada := a.Session()

	for i := range 20 { // HEAD draws an open and holds no slot
		if r := []*replica{a, b}[i%2].Call("HEAD", "/api/v1/events", nil, ada); r.Status != 200 {
			t.Fatalf("open %d of the burst: %d", i+1, r.Status)
		}
	}
	for _, r := range []*replica{a, b} {
		_, rep := r.OpenStream("/api/v1/events", ada)
		refusedBy(t, rep, "stream-opens", 60, 60, 1)
	}

	keys := []string{a.Key(), a.Key()}
	var first *apitest.Stream
	for i := range 16 { // the first key's cap, over both replicas
		st, rep := []*replica{a, b}[i%2].OpenStream("/api/v1/events", keys[0])
		if st == nil {
			t.Fatalf("key 1, stream %d: %d %s", i+1, rep.Status, rep.Body)
		}
		first = cmp.Or(first, st)
	}
	for i := range 4 {
		if st, rep := []*replica{a, b}[i%2].OpenStream("/api/v1/events", keys[1]); st == nil {
			t.Fatalf("key 2, stream %d: %d %s", i+1, rep.Status, rep.Body)
		}
	}
	for _, r := range []*replica{a, b} { // 20: the user's cap
		_, rep := r.OpenStream("/api/v1/events", keys[1])
		refusedBy(t, rep, "streams-per-user", 20, 0, 5)
	}
	first.Close() // on a
	apitest.Eventually(t, 2*time.Second, "a stream that ended on a frees its user's place on b", func() bool {
		st, _ := b.OpenStream("/api/v1/events", keys[1])
		return st != nil
	})
}

// Two replicas sharing the real Redis share each user's open budget:
// over three keys, the user's 7th open is refused on either replica, and
// gives back the key's open in Redis (a refund), so once the wait has
// passed the key's budget shows it never counted. The rates are slow
// (10 s an open), so that no key of the budgets expires in Redis's own
// time while the test's clock stands still.
func TestStreamUserOpensAcrossReplicas(t *testing.T) {
	svc, db := cluster(t)
	prefix := redistest.Prefix(t)
	clk := testclock.New(t0)
	var never atomic.Bool
	o := replicaOptions{userCap: streams.DefaultUserCap, opens: ratelimit.Rate{Limit: 6, Window: time.Minute, Burst: 20},
		userOpens: ratelimit.Rate{Limit: 6, Window: time.Minute, Burst: 6}, now: clk.Now}
	a, b := newReplicaWith(t, svc, db, prefix, time.Minute, &never, o), newReplicaWith(t, svc, db, prefix, time.Minute, &never, o)
	keys := []string{a.Key(), a.Key(), a.Key()}
	for i := range 6 {
		if st, rep := []*replica{a, b}[i%2].OpenStream("/api/v1/events", keys[i%3]); st == nil {
			t.Fatalf("open %d: %d %s", i+1, rep.Status, rep.Body)
		}
	}
	for i, r := range []*replica{a, b} {
		_, rep := r.OpenStream("/api/v1/events", keys[i])
		refusedBy(t, rep, "stream-opens-per-user", 6, 60, 10)
		if want := `"stream-opens";r=18;`; !strings.Contains(rep.Header.Get("RateLimit"), want) {
			t.Fatalf("the refusal's RateLimit %q, want %s: the key's open given back", rep.Header.Get("RateLimit"), want)
		}
	}
	clk.Advance(10 * time.Second) // an open of the user's, and of each key's
	st, rep := b.OpenStream("/api/v1/events", keys[0])
	if st == nil {
		t.Fatalf("once the wait has passed: %d %s", rep.Status, rep.Body)
	}
	if want := `"stream-opens";r=18;`; !strings.Contains(rep.Header.Get("RateLimit"), want) {
		t.Fatalf("RateLimit %q, want %s: the refused opens took none of the key's in Redis", rep.Header.Get("RateLimit"), want)
	}
}

// leases counts the streams Redis holds for the keys of the stream caps
// under prefix whose key starts with kind ("s:" sessions, "k:" API keys,
// "u:" users), by key.
func leases(t *testing.T, c rueidis.Client, prefix, kind string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Do(ctx, c.B().Keys().Pattern(prefix+"streams:"+kind+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, k := range keys {
		n, err := c.Do(ctx, c.B().Zcard().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// A Redis cut, over real HTTP: a replica whose Redis is cut off never
// lets a session past its 16 streams (its own count starts from the
// streams it holds); events published during the cut are lost, and both
// a live stream and one resuming from before the cut learn so with
// stream.gap; once Redis is back, Redis counts exactly the streams open
// (those that began in the cut get leases, the released ones go, those
// whose leases expired take them back), for the session and for its
// user, and the 17th is refused again on any replica.
func TestStreamsThroughARedisCut(t *testing.T) {
	svc, db := cluster(t)
	prefix := redistest.Prefix(t)
	// The leases last 4 beats and are renewed every beat: 300 ms leaves a
	// loaded machine room to renew them in time.
	const beat = 300 * time.Millisecond
	opt := redistest.Option(t)
	proxy := testproxy.New(t, opt.InitAddress[0])
	opt.InitAddress = []string{proxy.Addr()}
	opt.DisableRetry = true
	client := redistest.Client(t, opt)
	t.Cleanup(proxy.Cut) // before the client closes
	redisCap := func(max int) *streams.RedisCap {
		c := streams.NewRedisCap(client, prefix, max, 4*beat, streams.NewMemoryCap(max))
		c.Timeout = time.Second
		return c
	}
	hub := streams.NewRedisHub(client, prefix, 1000, 64)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	a := apitest.Start(t, api.Config{Auth: svc}, apitest.Streams(streams.Config{
		Cap: redisCap(streams.DefaultCap), UserCap: redisCap(streams.DefaultUserCap), Hub: hub, Heartbeat: beat}))
	var never atomic.Bool
	b := newReplica(t, svc, db, prefix, 4*beat, &never) // Redis never fails it
	rc := redistest.Client(t, redistest.Option(t))
	ada := a.Session()

	var open []*apitest.Stream
	for i := range streams.DefaultCap {
		st, r := a.OpenStream("/api/v1/events", ada)
		if st == nil {
			t.Fatalf("stream %d: %d %s", i+1, r.Status, r.Body)
		}
		open = append(open, st)
	}
	live := open[0]
	a.Call("POST", "/api/v1/apikeys", map[string]string{"name": "before"}, ada).Want(t, 201, "create a key")
	before := live.NextEvent(t)
	if before.Event != "apikey.created" || before.ID == "" {
		t.Fatalf("before the cut: %+v", before)
	}

	proxy.Cut()
	if _, r := a.OpenStream("/api/v1/events", ada); r.Status != 429 {
		t.Fatalf("the 17th during the cut: %d %s; want 429, the 16 in Redis counted", r.Status, r.Body)
	}
	open[1].Close() // Redis hears of neither
	open[2].Close()
	for i := range 2 {
		var st *apitest.Stream
		apitest.Eventually(t, 20*time.Second, "a closed stream frees its slot on this replica", func() bool {
			st, _ = a.OpenStream("/api/v1/events", ada)
			return st != nil
		})
		open[1+i] = st
	}
	if _, r := a.OpenStream("/api/v1/events", ada); r.Status != 429 {
		t.Fatalf("the 17th during the cut, after 2 closed and 2 opened: %d %s; want 429", r.Status, r.Body)
	}
	// Its event is lost; then the leases in Redis expire.
	a.Call("POST", "/api/v1/apikeys", map[string]string{"name": "lost"}, ada).Want(t, 201, "create a key during the cut")
	time.Sleep(4 * beat)

	proxy.Restore()
	gap := live.NextEvent(t)
	if gap.Event != "stream.gap" || gap.Data != `{"after":"`+before.ID+`"}` || gap.ID == "" {
		t.Fatalf("the live stream after the cut: %+v; want stream.gap after %s, with an id", gap, before.ID)
	}
	var s, u map[string]int64
	apitest.Eventually(t, 10*time.Second, "Redis counts the 16 streams open, for the session and for its user", func() bool {
		s, u = leases(t, rc, prefix, "s:"), leases(t, rc, prefix, "u:")
		ok := len(s) == 1 && len(u) == 1 && slices.Equal(slices.Collect(maps.Values(s)), []int64{16}) && slices.Equal(slices.Collect(maps.Values(u)), []int64{16})
		if !ok {
			t.Logf("leases: session %v, user %v", s, u)
		}
		return ok
	})
	for _, r := range []*replica{{Server: a}, b} {
		if _, rep := r.OpenStream("/api/v1/events", ada); rep.Status != 429 {
			t.Fatalf("the 17th after the cut: %d %s", rep.Status, rep.Body)
		}
	}
	open[3].Close()
	var resumed *apitest.Stream
	apitest.Eventually(t, 20*time.Second, "a closed stream frees its slot", func() bool {
		resumed, _ = b.OpenStream("/api/v1/events", ada, "Last-Event-ID: "+before.ID)
		return resumed != nil
	})
	if m := resumed.NextEvent(t); m.Event != "stream.gap" || m.ID != gap.ID {
		t.Fatalf("a resume from before the cut: %+v; want the stream.gap %s", m, gap.ID)
	}
}
