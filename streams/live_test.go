// The live snapshot while the database stalls: the gauge a feature gives
// it waits, the other streams do not.

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

// While the database stalls, live streams go on: the one whose turn it is
// waits for the gauge (up to a second), the others send its last value
// meanwhile, and a read that fails keeps the last.
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
	ctx := api.WithLogger(context.Background(), slog.New(slog.NewTextHandler(s.Logs, nil))) // as a stream's request logs
	if snap := streams.LiveSnapshotOf(ctx, s.Streams); snap.Gauges["things_waiting"] != 2 {
		t.Fatalf("the snapshot: %+v; want 2 things waiting", snap)
	}

	clk.Advance(time.Second)
	stall.Start()
	counted := make(chan streams.LiveSnapshot, 1)
	go func() { counted <- streams.LiveSnapshotOf(ctx, s.Streams) }()
	time.Sleep(100 * time.Millisecond) // its count reaches the stalled database (it waits a second there)
	other := streams.LiveSnapshotOf(ctx, s.Streams)
	select {
	case <-counted:
		t.Fatal("another stream's snapshot waited for the count of a stalled database")
	default:
	}
	if other.Gauges["things_waiting"] != 2 {
		t.Fatalf("the snapshot while the gauge is read: %+v; want its last value, 2", other)
	}
	select {
	case snap := <-counted:
		if snap.Gauges["things_waiting"] != 2 || !snap.At.Equal(clk.Now()) {
			t.Fatalf("the snapshot whose gauge failed: %+v; want a new one with its last value, 2", snap)
		}
		if !strings.Contains(s.Logs.String(), "gauge things_waiting") {
			t.Fatalf("the gauge's failure is not logged:\n%s", s.Logs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the count of a stalled database did not give up within 5 s")
	}
}

// While the first snapshot's gauges are read, the other streams send the
// empty one before it, whose gauges are each 0, as the spec has them
// (always present), never null (the dashboard lists them).
func TestSystemLiveGaugesAreNeverNull(t *testing.T) {
	release := make(chan struct{})
	reading := make(chan struct{})
	slow := func(s *api.Server) {
		streams.AddGauge(s, "things_waiting", "Things waiting.", func(ctx context.Context) (int64, error) {
			close(reading)
			<-release
			return 1, nil
		})
	}
	s := apitest.Start(t, api.Config{Features: []api.Feature{slow}})
	first := make(chan streams.LiveSnapshot, 1)
	go func() { first <- streams.LiveSnapshotOf(context.Background(), s.Streams) }()
	<-reading
	other, err := json.Marshal(streams.LiveSnapshotOf(context.Background(), s.Streams))
	close(release)
	if err != nil || !strings.Contains(string(other), `"gauges":{"things_waiting":0}`) {
		t.Fatalf("the snapshot while the first is read: %s (%v); want each gauge 0", other, err)
	}
	if snap := <-first; snap.Gauges["things_waiting"] != 1 {
		t.Fatalf("the first snapshot: %+v; want 1 thing waiting", snap)
	}
}
