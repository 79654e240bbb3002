package ingest_test

import (
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
)

// What the memory example adds to /metrics, scraped over HTTP after the
// traffic: every user's jobs by status and the idempotent replays; a job
// read by its id is counted under the route's pattern, never its path.
// (api's TestRefusalsAndMetrics checks the platform's own metrics.)
func TestJobsAndReplaysMetrics(t *testing.T) {
	m := api.NewMetrics()
	db := apitest.OpenDB(t)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{}) // no worker: jobs stay queued
	l := apitest.Start(t, api.Config{Auth: apitest.NewAuth(t, db), Features: []api.Feature{ingest.Feature(memory)}, Metrics: m})
	key := l.Key()

	batch := map[string]any{"project": "p", "items": []map[string]string{{"text": "one"}}}
	job := l.Call("POST", "/api/v1/memory/ingest", batch, key).Want(t, 202, "ingest").Header.Get("Location")
	l.Call("POST", "/api/v1/memory/ingest", batch, key).Want(t, 202, "replay")
	l.Call("GET", job, nil, key).Want(t, 200, "the job")

	metrics := apitest.Scrape(t, m)
	for _, want := range []string{
		`brain_jobs{status="queued"} 1`,
		`brain_jobs{status="running"} 0`,
		`brain_jobs{status="failed"} 0`,
		`brain_ingest_replays_total 1`,
		`brain_http_request_duration_seconds_count{route="/api/v1/jobs/{id}",status="200"} 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.HasPrefix(job, "/api/v1/jobs/") || strings.Contains(metrics, job) {
		t.Errorf("/metrics names a raw path (the job is %q)", job)
	}
}
