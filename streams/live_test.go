// The live snapshots: kept for new streams, and taken while the database
// stalls without a stream waiting.

package streams_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/brain-template/brain/streams"
)

// nextSnapshot reads st's next event, a system.live snapshot.
func nextSnapshot(t *testing.T, st *apitest.Stream) streams.LiveSnapshot {
	t.Helper()
	var snap streams.LiveSnapshot
	if m := st.NextEvent(t); m.Event != "system.live" || json.Unmarshal([]byte(m.Data), &snap) != nil {
		t.Fatalf("the live stream's event: %+v; want a system.live snapshot", m)
	}
	return snap
}

// The runtime keeps the last HistoryLen snapshots, one per tick of its
// clock (a tick that finds the clock where it was adds none); a stream
// opened after K ticks gets those K first, oldest first, each with its own
// time, then each new one, once.
func TestSystemLiveHistory(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testclock.New(start)
	s := apitest.Start(t, api.Config{Now: clk.Now})
	ctx := context.Background()
	const k = 5
	for i := range k {
		if i > 0 {
			clk.Advance(time.Second)
		}
		if kept := streams.TakeSnapshot(ctx, s.Streams); len(kept) != i+1 {
			t.Fatalf("after tick %d, %d snapshots kept; want %d", i+1, len(kept), i+1)
		}
	}
	if kept := streams.TakeSnapshot(ctx, s.Streams); len(kept) != k {
		t.Fatalf("a tick with the clock unmoved: %d snapshots kept, want %d", len(kept), k)
	}

	st, r := s.OpenStream("/api/v1/system/live", s.Session())
	if st == nil {
		t.Fatalf("the live stream: %d %s", r.Status, r.Body)
	}
	for i := range k {
		if snap := nextSnapshot(t, st); !snap.At.Equal(start.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("the stream's event %d is the snapshot of %s; want the one of second %d", i, snap.At, i)
		}
	}
	clk.Advance(time.Second)
	streams.TakeSnapshot(ctx, s.Streams)
	if snap := nextSnapshot(t, st); !snap.At.Equal(start.Add(k * time.Second)) {
		t.Fatalf("the stream's first live event is the snapshot of %s; want the new one, of second %d", snap.At, k)
	}
	st.Close()

	var kept []streams.LiveSnapshot
	for range streams.HistoryLen + 10 {
		clk.Advance(time.Second)
		kept = streams.TakeSnapshot(ctx, s.Streams)
	}
	if len(kept) != streams.HistoryLen || !kept[len(kept)-1].At.Equal(clk.Now()) {
		t.Fatalf("%d snapshots kept, the last of %s; want the last %d, up to %s", len(kept), kept[len(kept)-1].At, streams.HistoryLen, clk.Now())
	}
	for i := 1; i < len(kept); i++ {
		if kept[i].At.Sub(kept[i-1].At) != time.Second {
			t.Fatalf("snapshots %d and %d kept are of %s and %s; want one a second, in order", i-1, i, kept[i-1].At, kept[i].At)
		}
	}
}

// While the database stalls, the snapshot being taken waits for the gauge
// (up to a second) and keeps its last value, logging the failure; a stream
// opened meanwhile gets the snapshots kept at once.
func TestSystemLiveWhileTheDatabaseStalls(t *testing.T) {
	db, stall := storetest.OpenStallable(t, store.Postgres)
	clk := testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	// Two things waiting, counted by a query that waits when the database does.
	count := func(s *api.Server) {
		streams.AddGauge(s, "things_waiting", "Things waiting.", func(ctx context.Context) (n int64, err error) {
			return n, db.QueryRowContext(ctx, "SELECT 2").Scan(&n)
		})
	}
	s := apitest.Start(t, api.Config{Now: clk.Now, Features: []api.Feature{count}})
	ctx := api.WithLogger(context.Background(), slog.New(slog.NewTextHandler(s.Logs, nil)))
	if kept := streams.TakeSnapshot(ctx, s.Streams); kept[0].Gauges["things_waiting"] != 2 {
		t.Fatalf("the snapshot: %+v; want 2 things waiting", kept[0])
	}

	ada := s.Session()
	clk.Advance(time.Second)
	stall.Start()
	taken := make(chan []streams.LiveSnapshot, 1)
	go func() { taken <- streams.TakeSnapshot(ctx, s.Streams) }()
	st, r := s.OpenStream("/api/v1/system/live", ada)
	if st == nil {
		t.Fatalf("the live stream: %d %s", r.Status, r.Body)
	}
	if snap := nextSnapshot(t, st); snap.Gauges["things_waiting"] != 2 || !snap.At.Equal(clk.Now().Add(-time.Second)) {
		t.Fatalf("the stream's first snapshot while the gauge is read: %+v; want the one kept, with 2", snap)
	}
	select {
	case <-taken:
		t.Fatal("the stream's first snapshot waited for the gauge of a stalled database")
	default:
	}
	select {
	case kept := <-taken:
		snap := kept[len(kept)-1]
		if len(kept) != 2 || snap.Gauges["things_waiting"] != 2 || !snap.At.Equal(clk.Now()) {
			t.Fatalf("the snapshots after the gauge failed: %+v; want a new one with its last value, 2", kept)
		}
		if !strings.Contains(s.Logs.String(), "gauge things_waiting") {
			t.Fatalf("the gauge's failure is not logged:\n%s", s.Logs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the count of a stalled database did not give up within 5 s")
	}
}
