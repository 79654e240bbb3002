// Who may follow GET /api/v1/system/live, what its snapshot counts, and
// what the spec says of both.

package streams_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
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

// The live snapshot's gauges are those the features give it
// (streams.AddGauge), {} without one; any caller may follow it by default, and with
// LiveAccess Admin only users with the admin role (ada, the first user,
// not a user named admin), the others getting 403, as the spec says in each case.
func TestSystemLive(t *testing.T) {
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	if _, err := svc.AddUser(context.Background(), "admin", apitest.Password); err != nil {
		t.Fatal(err)
	}

	t.Run("all", func(t *testing.T) {
		three := func(s *api.Server) {
			streams.AddGauge(s, "things_waiting", "Things waiting.", func(context.Context) (int64, error) { return 3, nil })
		}
		l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{three}})
		if snap := l.LiveSnapshot(l.Session()); !maps.Equal(snap.Gauges, map[string]int64{"things_waiting": 3}) {
			t.Fatalf("ada's snapshot: %+v; want the feature's gauge, 3 things waiting", snap)
		}
		if _, ok := liveResponses(t, l.Server)["403"]; ok {
			t.Fatal("the spec declares a 403 on the live stream, which any caller may follow")
		}
	})
	t.Run("admin", func(t *testing.T) {
		l := apitest.Start(t, api.Config{Auth: svc}, apitest.Streams(streams.Config{LiveAccess: api.Admin}))
		named := l.Login("admin", apitest.Password).Cookie(t)
		_, r := l.OpenStream("/api/v1/system/live", named)
		var env struct{ Code string }
		if r.Status != http.StatusForbidden || json.Unmarshal([]byte(r.Body), &env) != nil || env.Code != "forbidden" {
			t.Fatalf("the user named admin, without the role: %d %s; want 403 forbidden", r.Status, r.Body)
		}
		if snap := l.LiveSnapshot(l.Session()); snap.Gauges == nil || len(snap.Gauges) != 0 {
			t.Fatalf("ada's snapshot (an admin by the first-user rule): %+v; want gauges {}, no feature giving one", snap)
		}
		if st, r := l.OpenStream("/api/v1/events", named); st == nil {
			t.Fatalf("the other user's other streams: %d %s", r.Status, r.Body)
		}
		if _, ok := liveResponses(t, l.Server)["403"]; !ok {
			t.Fatal("the spec does not declare the 403 of a caller who is not admin")
		}
	})
	// A caller looping on the 403 draws from its session's budget, as
	// the spec's x-rate-limit says, and is answered 429 once it is spent.
	t.Run("a 403 is charged", func(t *testing.T) {
		three := ratelimit.Rate{Limit: 3, Window: time.Minute, Burst: 3}
		l := apitest.Start(t, api.Config{Auth: svc, Limits: api.Limits{Session: three}}, apitest.Streams(streams.Config{LiveAccess: api.Admin}))
		ada := l.Login("admin", apitest.Password).Cookie(t) // not an admin, whatever the name
		for i := range 3 {
			if _, r := l.OpenStream("/api/v1/system/live", ada); r.Status != http.StatusForbidden {
				t.Fatalf("ada's open %d: %d %s, want 403", i+1, r.Status, r.Body)
			}
		}
		_, r := l.OpenStream("/api/v1/system/live", ada)
		var env struct{ Details struct{ Scope string } }
		if r.Status != http.StatusTooManyRequests || json.Unmarshal([]byte(r.Body), &env) != nil || env.Details.Scope != "session" {
			t.Fatalf("ada's fourth open: %d %s, want 429 of the session plane", r.Status, r.Body)
		}
		var doc struct {
			Paths map[string]map[string]struct {
				XRateLimit []api.RateLimitEntry `json:"x-rate-limit"`
			}
		}
		spec, _ := l.Spec()
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

// gauge is a feature adding the gauge name, which reads 1.
func gauge(name string) api.Feature {
	return func(s *api.Server) {
		streams.AddGauge(s, name, "The "+name+".", func(context.Context) (int64, error) { return 1, nil })
	}
}

// The spec's snapshot lists the gauges the features add, before the
// plane's Feature or after it, each an integer always present with its
// doc; with none, gauges is an object with no member named.
func TestGaugesInTheSpec(t *testing.T) {
	gauges := func(features ...api.Feature) map[string]any {
		t.Helper()
		s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: features})
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		spec, err := s.Spec()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Components struct {
				Schemas map[string]struct{ Properties map[string]map[string]any }
			}
		}
		if err := json.Unmarshal(spec, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Components.Schemas["LiveSnapshot"].Properties["gauges"]
	}
	none := gauges(streams.New(streams.Config{}).Feature)
	if none["type"] != "object" || none["properties"] != nil || none["required"] != nil || !reflect.DeepEqual(none["examples"], []any{map[string]any{}}) {
		t.Fatalf("the gauges of a server with none: %v", none)
	}
	two := gauges(gauge("things"), streams.New(streams.Config{}).Feature, gauge("widgets"))
	want := map[string]any{
		"things":  map[string]any{"type": "integer", "format": "int64", "description": "The things."},
		"widgets": map[string]any{"type": "integer", "format": "int64", "description": "The widgets."},
	}
	if !reflect.DeepEqual(two["properties"], want) || !reflect.DeepEqual(two["required"], []any{"things", "widgets"}) ||
		!reflect.DeepEqual(two["examples"], []any{map[string]any{"things": 3.0, "widgets": 3.0}}) {
		t.Fatalf("the gauges of a server with two: %v", two)
	}
}

// A gauge added once the runtime takes its snapshots (a feature listed after
// the runtime's) is read from the next snapshot on, with no data race
// between the append and the snapshot reading the gauges (go test -race).
func TestGaugeAddedWhileSnapshotsAreTaken(t *testing.T) {
	rt := streams.New(streams.Config{})
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: []api.Feature{rt.Feature}})
	t.Cleanup(func() { _ = rt.CloseStreams(context.Background()) })
	added := make(chan struct{})
	go func() {
		gauge("late")(s)
		close(added)
	}()
	streams.TakeSnapshot(context.Background(), rt)
	<-added
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		h := streams.TakeSnapshot(context.Background(), rt)
		if n, ok := h[len(h)-1].Gauges["late"]; ok && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot read the gauge added after the runtime: %+v", h[len(h)-1])
		}
	}
}
