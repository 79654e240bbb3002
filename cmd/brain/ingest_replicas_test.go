package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// Two brain processes on one PostgreSQL database and one Redis: a batch
// accepted by one is worked (by either) to success; a follower of the
// other sees its events; the same batch sent to the other answers the
// same job. Each replica is a process of its own, as in production: its
// own River client, stream hub and connection pools, and nothing shared
// but the database and Redis.
func TestIngestAcrossReplicas(t *testing.T) {
	t.Parallel() // mostly waits: for processes, and for the queue's polls
	dbURL, redisURL, prefix := storetest.URL(t, store.Postgres), redistest.URL(t), redistest.Prefix(t)
	kv := func() map[string]string {
		return memoryEnv(map[string]string{"BRAIN_DATABASE_URL": dbURL, "BRAIN_REDIS_URL": redisURL, "BRAIN_REDIS_PREFIX": prefix})
	}
	a := startProc(t, kv())
	b := startProc(t, kv()) // after a: a has migrated and created admin
	sa := loginAdmin(t, a.base)
	sb := session{client{t, b.base}, sa.cookie} // sessions live in the database
	events := follow(t, sb, "/api/v1/events")

	batch := map[string]any{"project": "replicas", "items": []map[string]any{{"text": "kestrel over the ring road"}, {"text": "second kestrel"}}}
	id := sa.accepted(sa.ingest(batch), false)
	want := map[string]bool{"job.queued": true, "job.succeeded": true}
	deadline := time.After(serverWork)
	for len(want) > 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("replica b closed the event stream; still waiting for %v", want)
			}
			var data struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &data); err == nil && data.JobID == id {
				delete(want, ev.Type)
			}
		case <-deadline:
			t.Fatalf("replica b's event stream did not carry %v for job %s within %v\na:\n%s\nb:\n%s", want, id, serverWork, a.logs, b.logs)
		}
	}
	if j := sb.waitJob(id, serverWork); j.ItemsTotal != 2 {
		t.Fatalf("replica b shows the job with %d items, want 2", j.ItemsTotal)
	}
	if got := sb.query("kestrel"); !slices.Equal(got, []string{"kestrel over the ring road", "second kestrel"}) {
		t.Fatalf("replica b's query kestrel found %q", got)
	}
	if again := sb.ingest(batch); sb.accepted(again, true) != id {
		t.Fatalf("the batch sent to replica b answered %s, want job %s", again.raw, id)
	}
	// Killed, not stopped: a shutdown waits out its hub's read of Redis
	// (up to 2 s), which this test is not about.
	a.kill()
	b.kill()
}
