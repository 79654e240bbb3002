package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
)

type accepted struct {
	JobID    string `json:"job_id"`
	IngestID string `json:"ingest_id"`
	Status   string `json:"status"`
	Replayed bool   `json:"replayed"`
}

// A batch is accepted once: 202 with the job's Location; the same bytes
// again answer the same job, replayed; the same ingest_id with other
// content is refused with its own code.
func TestIngestIsIdempotent(t *testing.T) {
	l, _, ada := memoryServer(t)
	body := `{"project":"brain","items":[{"text":"retry with backoff","skill":"go","tags":["net"]}]}`
	first := l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(body), ada).Want(t, 202, "first")
	var a accepted
	first.Decode(t, &a)
	if a.Replayed || a.Status != "queued" || len(a.IngestID) != 64 || first.Header.Get("Location") != "/api/v1/jobs/"+a.JobID ||
		first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %+v %v", a, first.Header)
	}
	again := l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(body), ada).Want(t, 202, "replay")
	var b accepted
	again.Decode(t, &b)
	if !b.Replayed || b.JobID != a.JobID || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %+v %v", b, again.Header)
	}
	// The same content, spelt differently (member order, spacing, escapes):
	// the same canonical form, the same key.
	respelt := `{ "items": [ {"tags":["net"], "skill":"go", "text":"retry with \u0062ackoff"} ], "project": "brain" }`
	var c accepted
	l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(respelt), ada).Want(t, 202, "respelt").Decode(t, &c)
	if c.JobID != a.JobID || !c.Replayed {
		t.Fatalf("the same batch respelt: %+v, want job %s replayed", c, a.JobID)
	}
	reused := fmt.Sprintf(`{"ingest_id":%q,"project":"brain","items":[{"text":"something else"}]}`, a.IngestID)
	r := l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(reused), ada).Want(t, 422, "a reused key")
	if r.Code() != "idempotency-key-reused" {
		t.Fatalf("a reused key: %s", r.Body)
	}
	var jobs struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		}
	}
	l.Call("GET", "/api/v1/jobs", nil, ada).Want(t, 200, "jobs").Decode(t, &jobs)
	if len(jobs.Jobs) != 1 || jobs.Jobs[0].JobID != a.JobID {
		t.Fatalf("jobs: %+v, want the one", jobs)
	}
}

// Bad batches get the envelope with every problem at its place, and store
// nothing.
func TestIngestRefusesBadBatches(t *testing.T) {
	l, _, ada := memoryServer(t)
	for _, tc := range []struct{ name, body, where string }{
		{"no items", `{"project":"p","items":[]}`, "body.items"},
		{"too many", `{"project":"p","items":[` + strings.Repeat(`{"text":"x"},`, 1000) + `{"text":"x"}]}`, "body.items"},
		{"long text", `{"project":"p","items":[{"text":"` + strings.Repeat("x", 64<<10+1) + `"}]}`, "body.items[0].text"},
		{"bad ingest_id", `{"ingest_id":"ABC","project":"p","items":[{"text":"x"}]}`, "body.ingest_id"},
		{"unknown member", `{"project":"p","items":[{"text":"x","colour":"red"}]}`, "body.items[0]"},
		{"null", `{"project":null,"items":[{"text":"x"}]}`, "body.project"},
	} {
		r, err := apitest.Exchange(context.Background(), l.HTTP, "POST", l.URL+"/api/v1/memory/ingest", strings.NewReader(tc.body), ada)
		if err != nil {
			t.Fatal(err)
		}
		var env envelope
		_ = json.Unmarshal([]byte(r.Body), &env)
		if r.Status != 422 || len(env.Details.Errors) == 0 || env.Details.Errors[0].Location != tc.where {
			t.Errorf("%s: %d %.200s, want 422 at %s", tc.name, r.Status, r.Body, tc.where)
		}
	}
	xml, _ := http.NewRequest("POST", l.URL+"/api/v1/memory/ingest", strings.NewReader(`{"project":"p","items":[{"text":"x"}]}`))
	xml.Header.Set("Content-Type", "application/xml")
	xml.Header.Set("Cookie", strings.TrimPrefix(ada, "Cookie: "))
	if res, err := l.HTTP.Do(xml); err != nil || res.StatusCode != 415 {
		t.Errorf("an XML content type: %v %v, want 415", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
	huge := `{"project":"p","items":[{"text":"` + strings.Repeat("x", 8<<20) + `"}]}`
	if r := l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(huge), ada); r.Status != 413 {
		t.Errorf("a body over 8 MiB: %d", r.Status)
	}
	var jobs struct{ Jobs []any }
	l.Call("GET", "/api/v1/jobs", nil, ada).Want(t, 200, "jobs").Decode(t, &jobs)
	if len(jobs.Jobs) != 0 {
		t.Fatalf("bad batches made jobs: %+v", jobs)
	}
}

// Processed items are found, ranked, paged, counted in skills and
// projects, deleted; another user sees none of them.
func TestMemoryQueryAndLists(t *testing.T) {
	l, memory, ada := memoryServer(t)
	var items []string
	for i := range 5 {
		items = append(items, fmt.Sprintf(`{"text":"%s needle %d","skill":"go"}`, strings.Repeat("needle ", i), i))
	}
	var a accepted
	l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(`{"project":"p","items":[`+strings.Join(items, ",")+`]}`), ada).Want(t, 202, "ingest").Decode(t, &a)
	if err := memory.Process(context.Background(), a.JobID); err != nil {
		t.Fatal(err)
	}
	var job struct {
		Status    string `json:"status"`
		ItemsDone int    `json:"items_done"`
	}
	l.Call("GET", "/api/v1/jobs/"+a.JobID, nil, ada).Want(t, 200, "job").Decode(t, &job)
	if job.Status != "succeeded" || job.ItemsDone != 5 {
		t.Fatalf("job: %+v", job)
	}
	if _, r := l.OpenStream("/api/v1/jobs/"+a.JobID+"/log", ada); r.Status != 204 {
		t.Fatalf("the log of an ended job: %d, want 204 (an EventSource then stops)", r.Status)
	}
	type page struct {
		Results []struct {
			ID, Text, Snippet string
			Score             float64
		}
		NextCursor string `json:"next_cursor"`
	}
	var all []string
	cursor := ""
	for range 4 {
		var p page
		l.Call("GET", "/api/v1/memory/query?q=NEEDLE&limit=2&cursor="+cursor, nil, ada).Want(t, 200, "query").Decode(t, &p)
		for _, r := range p.Results {
			all = append(all, r.Text)
			if !strings.Contains(r.Snippet, "**") {
				t.Errorf("snippet %q marks no match", r.Snippet)
			}
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 5 || !strings.HasPrefix(all[0], strings.Repeat("needle ", 4)) {
		t.Fatalf("paged results %q: want all five, the most needles first", all)
	}
	var skills struct {
		Skills []struct {
			Name  string
			Count int
		}
	}
	l.Call("GET", "/api/v1/memory/skills", nil, ada).Want(t, 200, "skills").Decode(t, &skills)
	var projects struct {
		Projects []struct {
			Name  string
			Items int
		}
	}
	l.Call("GET", "/api/v1/memory/projects", nil, ada).Want(t, 200, "projects").Decode(t, &projects)
	if len(skills.Skills) != 1 || skills.Skills[0].Count != 5 || len(projects.Projects) != 1 || projects.Projects[0].Items != 5 {
		t.Fatalf("skills %+v, projects %+v", skills, projects)
	}
	var first page
	l.Call("GET", "/api/v1/memory/query?q=needle&limit=1", nil, ada).Want(t, 200, "query").Decode(t, &first)
	l.Call("DELETE", "/api/v1/memory/items/"+first.Results[0].ID, nil, ada).Want(t, 204, "delete")
	l.Call("DELETE", "/api/v1/memory/items/"+first.Results[0].ID, nil, ada).Want(t, 404, "delete again")
	l.Call("GET", "/api/v1/jobs/00000000-0000-4000-8000-000000000000", nil, ada).Want(t, 404, "no such job")
	l.Call("GET", "/api/v1/memory/query?q=", nil, ada).Want(t, 422, "an empty query")
	l.Call("GET", "/api/v1/memory/query?q=needle&cursor=bm90LWEtY3Vyc29y", nil, ada).Want(t, 422, "a cursor of no query")
}

// Each user's memory is their own: another user finds none of it, cannot
// read or delete it, and its identical batch is a job of its own.
func TestMemoryIsPrivate(t *testing.T) {
	l, memory, ada, svc := memoryServerAuth(t)
	body := json.RawMessage(`{"project":"p","items":[{"text":"secret"}]}`)
	var a accepted
	l.Call("POST", "/api/v1/memory/ingest", body, ada).Want(t, 202, "ingest").Decode(t, &a)
	if err := memory.Process(context.Background(), a.JobID); err != nil {
		t.Fatal(err)
	}
	var found struct{ Results []struct{ ID string } }
	l.Call("GET", "/api/v1/memory/query?q=secret", nil, ada).Want(t, 200, "ada's query").Decode(t, &found)
	if len(found.Results) != 1 {
		t.Fatalf("ada finds %+v", found)
	}
	if _, err := svc.AddUser(context.Background(), "bob", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	bob := l.Login("bob", "correct horse battery").Cookie(t)
	var none struct{ Results []any }
	l.Call("GET", "/api/v1/memory/query?q=secret", nil, bob).Want(t, 200, "bob's query").Decode(t, &none)
	if len(none.Results) != 0 {
		t.Fatalf("bob finds ada's items: %+v", none)
	}
	l.Call("GET", "/api/v1/jobs/"+a.JobID, nil, bob).Want(t, 404, "bob reads ada's job")
	l.Call("DELETE", "/api/v1/memory/items/"+found.Results[0].ID, nil, bob).Want(t, 404, "bob deletes ada's item")
	var b accepted
	l.Call("POST", "/api/v1/memory/ingest", body, bob).Want(t, 202, "bob's identical batch").Decode(t, &b)
	if b.Replayed || b.JobID == a.JobID {
		t.Fatalf("bob's identical batch: %+v, want a job of its own", b)
	}
}

// A batch past a quota is a 409 conflict that names the quota, its limit
// and what the caller holds, and says what frees room; nothing is stored
// or enqueued. A replay over the quota still answers 202. A job that
// fails gives back the items it never stored, a job that ends its slot,
// a deleted item itself. The ingest operation declares the 409.
func TestIngestQuotasOverHTTP(t *testing.T) {
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub), MaxItems: 5, MaxQueuedJobs: 2})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	ctx := context.Background()

	batch := func(project string, n int) json.RawMessage {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"text":"note %d of %s"}`, i, project)
		}
		return json.RawMessage(`{"project":"` + project + `","items":[` + strings.Join(items, ",") + `]}`)
	}
	ingestOK := func(body json.RawMessage, replayed bool) string {
		t.Helper()
		var a accepted
		l.Call("POST", "/api/v1/memory/ingest", body, ada).Want(t, 202, "ingest").Decode(t, &a)
		if a.Replayed != replayed {
			t.Fatalf("ingest answered %+v, want replayed %v", a, replayed)
		}
		return a.JobID
	}
	type quotaEnvelope struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	refused := func(body json.RawMessage, quota string, limit, used int, says ...string) {
		t.Helper()
		r := l.Call("POST", "/api/v1/memory/ingest", body, ada).Want(t, 409, "ingest past the "+quota+" quota")
		var env quotaEnvelope
		r.Decode(t, &env)
		want := map[string]any{"quota": quota, "limit": float64(limit), "used": float64(used)}
		if env.Code != "conflict" || fmt.Sprint(env.Details) != fmt.Sprint(want) || r.Header.Get("Retry-After") != "" {
			t.Fatalf("409: %s; want code conflict, details %v, no Retry-After", r.Body, want)
		}
		for _, s := range says {
			if !strings.Contains(env.Message, s) {
				t.Errorf("409 message %q does not say %q", env.Message, s)
			}
		}
	}
	jobs := func() int {
		t.Helper()
		var page struct{ Jobs []any }
		l.Call("GET", "/api/v1/jobs", nil, ada).Want(t, 200, "jobs").Decode(t, &page)
		return len(page.Jobs)
	}

	a := ingestOK(batch("a", 2), false) // 2 items, 1 job
	refused(batch("b", 4), "items", 5, 2, "quota of 5 items", "you hold 2", "DELETE /api/v1/memory/items/{id}")
	if n := jobs(); n != 1 {
		t.Fatalf("%d jobs after a refusal, want 1", n)
	}
	ingestOK(batch("a", 2), true) // a replay takes nothing, even at the quota
	c := ingestOK(batch("c", 1), false)
	refused(batch("d", 1), "queued_jobs", 2, 2, "2 jobs queued or running", "wait for some to finish")

	// Job a fails before storing its 2 items: they and its slot come back.
	if err := memory.Fail(ctx, a, "gave up"); err != nil {
		t.Fatal(err)
	}
	d := ingestOK(batch("d", 1), false)
	for _, id := range []string{c, d} {
		if err := memory.Process(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// 2 items stored: 4 more do not fit, until one is deleted.
	refused(batch("b", 4), "items", 5, 2)
	var found struct{ Results []struct{ ID string } }
	l.Call("GET", "/api/v1/memory/query?q=note&project=c", nil, ada).Want(t, 200, "query").Decode(t, &found)
	if len(found.Results) != 1 {
		t.Fatalf("query found %+v", found)
	}
	l.Call("DELETE", "/api/v1/memory/items/"+found.Results[0].ID, nil, ada).Want(t, 204, "delete")
	ingestOK(batch("b", 4), false)

	var spec struct {
		Paths map[string]map[string]struct {
			Description string
			Responses   map[string]any
		}
	}
	l.Call("GET", "/openapi.json", nil).Want(t, 200, "spec").Decode(t, &spec)
	op := spec.Paths["/api/v1/memory/ingest"]["post"]
	if op.Responses["409"] == nil || !strings.Contains(op.Description, "you may hold 5 items") || !strings.Contains(op.Description, "2 jobs queued or running") {
		t.Errorf("the ingest operation does not declare the 409 and the running quotas: %q", op.Description)
	}
}
