package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// lookups counts the credential lookups that reach the database.
type lookups struct {
	auth.Store
	n atomic.Int64
}

func (l *lookups) SessionByTokenHash(ctx context.Context, h string) (auth.Session, auth.User, error) {
	l.n.Add(1)
	return l.Store.SessionByTokenHash(ctx, h)
}

func (l *lookups) APIKeyByHash(ctx context.Context, h string) (auth.APIKey, auth.User, error) {
	l.n.Add(1)
	return l.Store.APIKeyByHash(ctx, h)
}

// failedAuthServer is the whole server over real HTTP with an ip budget
// of 3 a minute and a fake clock; it returns the server, the store's
// lookup count, the clock and a valid API key of ada's.
func failedAuthServer(t *testing.T) (*apitest.Client, *lookups, *fakeClock, string) {
	return limitedHTTPServer(t, ratelimit.Rate{Limit: 3, Window: time.Minute, Burst: 3})
}

// limitedHTTPServer is failedAuthServer with the ip budget ip.
func limitedHTTPServer(t *testing.T, ip ratelimit.Rate) (*apitest.Client, *lookups, *fakeClock, string) {
	t.Helper()
	clk := testclock.New(t0)
	st := &lookups{Store: store.NewAuthStore(storetest.Open(t, store.SQLite))}
	svc := auth.NewService(st, auth.Config{Argon2: cheap, Now: clk.Now})
	u, err := svc.AddUser(context.Background(), "ada", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(context.Background(), u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	l := small(clk)
	l.IP = ip
	l.APIKey = ratelimit.Rate{Limit: 100, Window: time.Minute, Burst: 100} // ada's key and session are never the ones refused
	l.Session = l.APIKey
	// Loopback is a trusted proxy: a test picks a client address with
	// X-Forwarded-For; without one, the client is the peer.
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: l, Now: clk.Now, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	return apitest.Serve(t, s), st, clk, key
}

// Every request whose credentials fail draws from its address's ip
// budget, and its 401 says so in the headers; past the budget it is a
// 429, and made-up credentials no longer reach the database, while a
// caller the caches know still gets in.
func TestFailedAuthChargesIPPlane(t *testing.T) {
	l, st, clk, key := failedAuthServer(t)
	const me = "/api/v1/auth/me"
	l.Call("GET", me, nil, "X-API-Key: "+key).Want(t, 200, "valid key") // ada's key is now cached
	made := func(i int) string { return fmt.Sprintf("X-API-Key: brk_%032d", i) }
	for i, hdr := range []string{made(0), "Cookie: brain_session=" + strings.Repeat("c", 43), ""} { // the last sends none
		r := l.Call("GET", me, nil, hdr)
		if r.Status != 401 || r.Header.Get("RateLimit-Policy") != `"ip";q=3;w=60` || r.Header.Get("RateLimit") == "" {
			t.Fatalf("failed auth %d: %d, RateLimit-Policy %q: want 401 drawing from the ip plane", i, r.Status, r.Header.Get("RateLimit-Policy"))
		}
	}
	var before int64
	for i := range 51 {
		if i == 1 { // the first refusal taught the server the address is refused
			before = st.n.Load()
		}
		r := l.Call("GET", me, nil, made(100+i))
		if env := r.Refusal(t); r.Status != 429 || env.Details.Scope != "ip" || r.Header.Get("Retry-After") != "20" {
			t.Fatalf("made-up key past the ip budget: %d %+v Retry-After %q; want 429 scope ip, 20 s", r.Status, env, r.Header.Get("Retry-After"))
		}
	}
	if n := st.n.Load() - before; n != 0 {
		t.Fatalf("%d database lookups for 50 made-up keys from a refused address, want 0", n)
	}
	// A caller the caches know draws from its own budget, and is looked
	// up again once its entry is stale: it is not locked out behind an
	// address someone else got refused.
	l.Call("GET", me, nil, "X-API-Key: "+key).Want(t, 200, "a cached valid key from the refused address")
	clk.Advance(11 * time.Second) // past CacheTTL; the address is refused for 9 s more
	if r := l.Call("GET", me, nil, "X-API-Key: "+key); r.Status != 200 || strings.Contains(r.Header.Get("RateLimit-Policy"), `"ip"`) {
		t.Fatalf("a known key whose cache entry went stale: %d %q, want 200 on its own budget", r.Status, r.Header.Get("RateLimit-Policy"))
	}
	l.Call("GET", me, nil, made(998)).Want(t, 429, "a made-up key while the address is still refused")
	// Once the budget admits again, credentials are looked up again.
	clk.Advance(9 * time.Second)
	before = st.n.Load()
	l.Call("GET", me, nil, made(999)).Want(t, 401, "after Retry-After")
	if st.n.Load()-before != 1 {
		t.Fatal("after Retry-After the credentials were not looked up")
	}
}

// Made-up credentials repeated are looked up once per CacheTTL, whatever
// the ip budget.
func TestRepeatedUnknownKeyLookedUpOnce(t *testing.T) {
	l, st, _, _ := failedAuthServer(t)
	before := st.n.Load()
	for range 3 { // within the ip budget
		l.Call("GET", "/api/v1/auth/me", nil, fmt.Sprintf("Authorization: Bearer brk_%032d", 7)).Want(t, 401, "unknown key")
	}
	if n := st.n.Load() - before; n != 1 {
		t.Fatalf("%d lookups of one unknown key, want 1", n)
	}
}

// Credentials sent to public and exempt routes are never looked up.
func TestPublicRoutesIgnoreCredentials(t *testing.T) {
	l, st, _, _ := failedAuthServer(t)
	before := st.n.Load()
	for i := range 20 {
		for _, path := range []string{"/api/v1/health", "/openapi.json", "/api/v1/nope"} {
			l.Call("GET", path, nil, fmt.Sprintf("X-API-Key: brk_%032d", i))
		}
	}
	if n := st.n.Load() - before; n != 0 {
		t.Fatalf("%d lookups for credentials sent to public routes, want 0", n)
	}
}

// The spec says what the server does: an operation that needs a caller
// shows the ip budget as applying to unauthenticated callers, and its 401
// declares the rate-limit headers.
func TestSpecShowsIPBudgetOnFailedAuth(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	spec, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			XRateLimit []api.RateLimitEntry `json:"x-rate-limit"`
			Responses  map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		}
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	me := doc.Paths["/api/v1/auth/me"]["get"]
	var ip *api.RateLimitEntry
	for i, e := range me.XRateLimit {
		if e.Plane == "ip" {
			ip = &me.XRateLimit[i]
		}
	}
	if ip == nil || ip.AppliesTo != "unauthenticated" || ip.Limit != 30 || ip.WindowS != 60 {
		t.Fatalf("get-me x-rate-limit %+v: want an ip entry applying to unauthenticated callers", me.XRateLimit)
	}
	if me.Responses["401"].Headers["RateLimit"] == nil || me.Responses["401"].Headers["RateLimit-Policy"] == nil {
		t.Fatalf("get-me's 401 declares no rate-limit headers: %v", me.Responses["401"].Headers)
	}
	login := doc.Paths["/api/v1/auth/login"]["post"]
	for _, e := range login.XRateLimit {
		if e.AppliesTo != "" {
			t.Fatalf("login's budgets apply to every caller: %+v", e)
		}
	}
}

// An API key calling an operation that needs a session gets 403 from its
// own budget, and 429 past it: a key looping on a refusal is throttled.
// The spec shows that budget as applying to such (forbidden) requests.
func TestForbiddenKeyDrawsFromItsBudget(t *testing.T) {
	l, _, _, key := limitedHTTPServer(t, ratelimit.Rate{Limit: 3, Window: time.Minute, Burst: 3})
	var last apitest.Reply
	for range 100 { // the key's budget in this server
		last = l.Call("GET", "/api/v1/apikeys", nil, "X-API-Key: "+key)
		if last.Status != 403 || !strings.Contains(last.Header.Get("RateLimit-Policy"), `"apikey"`) {
			t.Fatalf("a key on a session-only operation: %d RateLimit-Policy %q, want 403 on the key's budget", last.Status, last.Header.Get("RateLimit-Policy"))
		}
	}
	if r := l.Call("GET", "/api/v1/apikeys", nil, "X-API-Key: "+key); r.Status != 429 || r.Refusal(t).Details.Scope != "apikey" {
		t.Fatalf("past the key's budget: %d %s, want 429 scope apikey", r.Status, r.Body)
	}
	s, _ := mustRawServer(t, api.Config{})
	entries, _ := s.API.OpenAPI().Paths["/api/v1/apikeys"].Get.Extensions["x-rate-limit"].([]api.RateLimitEntry)
	if !slices.ContainsFunc(entries, func(e api.RateLimitEntry) bool { return e.Plane == "apikey" && e.AppliesTo == "forbidden" }) {
		t.Fatalf("list-api-keys x-rate-limit %+v shows no apikey budget for forbidden requests", entries)
	}
}

// The per-address limits count an IPv6 client by its /64, the block one
// host is given, from which it may take a new address for every request:
// the ip budget (3 here) is shared by 2001:db8::1, ::2, ::3..., and not
// with another /64. (The login back-off and the bytes in flight key on
// the same middleware.ClientKey.)
func TestIPv6ClientsCountByTheirSlash64(t *testing.T) {
	l, _, _, _ := failedAuthServer(t)
	from := func(ip string) string { return "X-Forwarded-For: " + ip }
	for i := range 3 {
		l.Call("GET", "/api/v1/auth/me", nil, from(fmt.Sprintf("2001:db8::%x", i+1))).Want(t, 401, "a failed auth from the /64")
	}
	if r := l.Call("GET", "/api/v1/auth/me", nil, from("2001:db8::ffff:1")); r.Status != 429 || r.Refusal(t).Details.Scope != "ip" {
		t.Fatalf("a fourth address of the same /64: %d %s, want 429 scope ip", r.Status, r.Body)
	}
	l.Call("GET", "/api/v1/auth/me", nil, from("2001:db8:0:1::1")).Want(t, 401, "another /64")
}
