// The live snapshot while the database stalls: the count of queued jobs
// a feature gives it waits, the other streams do not.

package streams_test

import (
	"context"
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
// waits for the count of queued jobs (up to a second), the others send
// the last count meanwhile, and a count that fails keeps the last.
func TestSystemLiveWhileTheDatabaseStalls(t *testing.T) {
	db, stall := storetest.OpenStallable(t, store.Postgres)
	clk := testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	// Two jobs queued, counted by a query that waits when the database does.
	count := func(s *api.Server) {
		streams.CountQueuedJobs(s, func(ctx context.Context) (n int64, err error) {
			return n, db.QueryRowContext(ctx, "SELECT 2").Scan(&n)
		})
	}
	s := apitest.Start(t, api.Config{Now: clk.Now, Features: []api.Feature{count}})
	if snap := streams.LiveSnapshotOf(s.Streams); snap.JobsQueued != 2 {
		t.Fatalf("the snapshot: %+v; want 2 jobs queued", snap)
	}

	clk.Advance(time.Second)
	stall.Start()
	counted := make(chan streams.LiveSnapshot, 1)
	go func() { counted <- streams.LiveSnapshotOf(s.Streams) }()
	time.Sleep(100 * time.Millisecond) // its count reaches the stalled database (it waits a second there)
	other := streams.LiveSnapshotOf(s.Streams)
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
