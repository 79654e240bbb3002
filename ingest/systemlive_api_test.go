package ingest_test

import (
	"context"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
)

// The memory example gives the live snapshot its gauge jobs_queued: the
// jobs of every user waiting for a worker. (streams' TestSystemLive checks
// who may follow the stream.)
func TestSystemLiveCountsQueuedJobs(t *testing.T) {
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	if _, err := svc.AddUser(context.Background(), "bob", apitest.Password); err != nil {
		t.Fatal(err)
	}
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{}) // no worker: jobs stay queued
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}})
	ada, bob := l.Session(), l.Login("bob", apitest.Password).Cookie(t)
	for i, text := range []string{"one", "two", "three"} {
		who := []string{ada, bob}[i%2]
		l.Call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": text}}}, who).Want(t, 202, "ingest")
	}
	if snap := l.LiveSnapshot(ada); snap.Gauges["jobs_queued"] != 3 {
		t.Fatalf("the snapshot: %+v; want 3 jobs queued, ada's 2 and bob's 1", snap)
	}
}
