package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
)

// liveResponses returns the statuses the spec declares for the live
// stream.
func liveResponses(t *testing.T, s *api.Server) map[string]json.RawMessage {
	t.Helper()
	spec, err := s.Spec()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Paths["/api/v1/system/live"]["get"].Responses
}

// The live snapshot counts every user's queued jobs; any caller may
// follow it by default, and with LiveAccess Admin only the user admin,
// the others getting 403, as the spec says in each case.
func TestSystemLive(t *testing.T) {
	svc := MustAuth(t)
	if _, err := svc.AddUser(context.Background(), api.AdminUsername, "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	db, _ := dbOf.Load(svc)
	memory := ingest.NewService(ingest.NewSQLStore(db.(*store.DB), nil), ingest.Config{}) // no worker: jobs stay queued

	t.Run("all", func(t *testing.T) {
		s, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, nil)
		ada := l.login("ada", "correct horse battery").cookie(t)
		for _, text := range []string{"one", "two", "three"} {
			l.call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": text}}}, ada).want(t, 202, "ingest")
		}
		st, r := l.openStream("/api/v1/system/live", ada)
		if st == nil {
			t.Fatalf("ada follows the live stream: %d %s", r.status, r.body)
		}
		var snap api.LiveSnapshot
		if m := st.nextEvent(t); m.event != "system.live" || json.Unmarshal([]byte(m.data), &snap) != nil || snap.JobsQueued != 3 {
			t.Fatalf("the snapshot: %+v; want 3 jobs queued", m)
		}
		if _, ok := liveResponses(t, s)["403"]; ok {
			t.Fatal("the spec declares a 403 on the live stream, which any caller may follow")
		}
	})
	t.Run("admin", func(t *testing.T) {
		s, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, LiveAccess: api.Admin}, nil)
		ada := l.login("ada", "correct horse battery").cookie(t)
		_, r := l.openStream("/api/v1/system/live", ada)
		var env struct{ Code string }
		if r.status != http.StatusForbidden || json.Unmarshal([]byte(r.body), &env) != nil || env.Code != "forbidden" {
			t.Fatalf("ada, not admin: %d %s; want 403 forbidden", r.status, r.body)
		}
		admin := l.login(api.AdminUsername, "correct horse battery").cookie(t)
		if st, r := l.openStream("/api/v1/system/live", admin); st == nil {
			t.Fatalf("admin: %d %s", r.status, r.body)
		}
		if st, r := l.openStream("/api/v1/events", ada); st == nil {
			t.Fatalf("ada's other streams: %d %s", r.status, r.body)
		}
		if _, ok := liveResponses(t, s)["403"]; !ok {
			t.Fatal("the spec does not declare the 403 of a caller who is not admin")
		}
	})
	// A caller looping on the 403 draws from its session's budget, as
	// the spec's x-rate-limit says, and is answered 429 once it is spent.
	t.Run("a 403 is charged", func(t *testing.T) {
		three := ratelimit.Budget{Limit: 3, Window: time.Minute, Burst: 3}
		s, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, LiveAccess: api.Admin, Limits: api.Limits{Session: three}}, nil)
		ada := l.login("ada", "correct horse battery").cookie(t)
		for i := range 3 {
			if _, r := l.openStream("/api/v1/system/live", ada); r.status != http.StatusForbidden {
				t.Fatalf("ada's open %d: %d %s, want 403", i+1, r.status, r.body)
			}
		}
		_, r := l.openStream("/api/v1/system/live", ada)
		var env struct{ Details struct{ Scope string } }
		if r.status != http.StatusTooManyRequests || json.Unmarshal([]byte(r.body), &env) != nil || env.Details.Scope != "session" {
			t.Fatalf("ada's fourth open: %d %s, want 429 of the session plane", r.status, r.body)
		}
		var doc struct {
			Paths map[string]map[string]struct {
				XRateLimit []api.RateLimitEntry `json:"x-rate-limit"`
			}
		}
		spec, _ := s.Spec()
		if err := json.Unmarshal(spec, &doc); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(doc.Paths["/api/v1/system/live"]["get"].XRateLimit, func(e api.RateLimitEntry) bool {
			return e.Plane == "session" && e.AppliesTo == "forbidden"
		}) {
			t.Fatalf("the live stream's x-rate-limit %+v: want the session budget its 403s draw from", doc.Paths["/api/v1/system/live"]["get"].XRateLimit)
		}
	})
}

// While the database stalls, live streams go on: the one whose turn it is
// waits for the count of queued jobs (up to a second), the others send
// the last count meanwhile, and a count that fails keeps the last.
func TestSystemLiveWhileTheDatabaseStalls(t *testing.T) {
	db, proxy := proxiedPostgres(t)
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap})
	if _, err := svc.AddUser(context.Background(), "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	clk := testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	s, l, _ := streamServerWith(t, api.Config{Auth: svc, DB: db, Now: clk.Now}, nil)
	ada := l.login("ada", "correct horse battery").cookie(t)
	for _, text := range []string{"one", "two"} {
		l.call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": text}}}, ada).want(t, 202, "ingest")
	}
	if snap := api.LiveSnapshotOf(s); snap.JobsQueued != 2 {
		t.Fatalf("the snapshot: %+v; want 2 jobs queued", snap)
	}

	clk.Advance(time.Second)
	proxy.Stall()
	counted := make(chan api.LiveSnapshot, 1)
	go func() { counted <- api.LiveSnapshotOf(s) }()
	time.Sleep(100 * time.Millisecond) // its count reaches the stalled database (it waits a second there)
	other := api.LiveSnapshotOf(s)
	select {
	case <-counted:
		t.Fatal("another stream's snapshot waited for the count of a stalled database")
	default:
	}
	if other.JobsQueued != 2 {
		t.Fatalf("the snapshot while the count is under way: %+v; want the last count, 2", other)
	}
	select {
	case snap := <-counted:
		if snap.JobsQueued != 2 || !snap.At.Equal(clk.Now()) {
			t.Fatalf("the snapshot whose count failed: %+v; want a new one with the last count, 2", snap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the count of a stalled database did not give up within 5 s")
	}
}
