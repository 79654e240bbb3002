package main

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"testing"
	"time"
)

// session is a client logged in as admin: each request carries the
// session's cookie.
type session struct {
	client
	cookie string
}

// loginAdmin logs in as admin, whose password is adminPassword.
func loginAdmin(t *testing.T, base string) session {
	t.Helper()
	c := client{t, base}
	cookie, _ := sessionCookieOf(t, login(c, "admin", adminPassword).want(t, 200, "login"))
	return session{c, cookie}
}

// memoryEnv is the environment of a server the memory tests log in to
// over plain HTTP, whose session budget no test exhausts.
func memoryEnv(kv map[string]string) map[string]string {
	if kv == nil {
		kv = map[string]string{}
	}
	kv["BRAIN_ADMIN_PASSWORD"] = adminPassword
	kv["BRAIN_COOKIE_SECURE"] = "false"
	kv["BRAIN_RATE_LIMIT_SESSION"] = "10000/s,burst=10000"
	return kv
}

// do is client.do with the session's cookie.
func (s session) do(method, path string, body any) response {
	s.t.Helper()
	return s.client.do(method, path, body, s.cookie)
}

// ingest posts body (json.RawMessage to send bytes as they are).
func (s session) ingest(body any) response {
	s.t.Helper()
	return s.do("POST", "/api/v1/memory/ingest", body).want(s.t, 202, "ingest")
}

// accepted checks that r accepts a batch (replayed or not) and returns
// its job id.
func (s session) accepted(r response, replayed bool) string {
	s.t.Helper()
	id := r.str("job_id")
	if !regexp.MustCompile(uuidRE).MatchString(id) || r.header.Get("Location") != "/api/v1/jobs/"+id {
		s.t.Fatalf("ingest answered job_id %q, Location %q: %s", id, r.header.Get("Location"), r.raw)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(r.str("ingest_id")) {
		s.t.Fatalf("ingest answered ingest_id %q, want 64 hex digits", r.str("ingest_id"))
	}
	header := ""
	if replayed {
		header = "true"
	}
	if r.body["replayed"] != replayed || r.header.Get("Idempotent-Replayed") != header {
		s.t.Fatalf("ingest answered replayed %v, Idempotent-Replayed %q; want %v, %q: %s", r.body["replayed"], r.header.Get("Idempotent-Replayed"), replayed, header, r.raw)
	}
	return id
}

const uuidRE = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`

// jobState is the part of a job the tests check.
type jobState struct {
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	ItemsTotal int    `json:"items_total"`
	ItemsDone  int    `json:"items_done"`
	Error      string `json:"error"`
}

// waitJob polls job id until it is final, for up to within, and returns
// it; it must have succeeded with all its items done.
func (s session) waitJob(id string, within time.Duration) jobState {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var j jobState
		r := s.do("GET", "/api/v1/jobs/"+id, nil).want(s.t, 200, "get job "+id)
		if err := json.Unmarshal([]byte(r.raw), &j); err != nil {
			s.t.Fatal(err)
		}
		switch {
		case j.Status == "succeeded" && j.ItemsDone == j.ItemsTotal && j.ItemsTotal > 0:
			return j
		case j.Status == "succeeded" || j.Status == "failed":
			s.t.Fatalf("job %s ended as %s", id, r.raw)
		case time.Now().After(deadline):
			s.t.Fatalf("job %s is still %s after %v: %s", id, j.Status, within, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobs returns every job of the session's user, following next_cursor.
func (s session) jobs() []jobState {
	s.t.Helper()
	var all []jobState
	for cursor := ""; ; {
		var page struct {
			Jobs       []jobState `json:"jobs"`
			NextCursor string     `json:"next_cursor"`
		}
		r := s.do("GET", "/api/v1/jobs?limit=100&cursor="+cursor, nil).want(s.t, 200, "list jobs")
		if err := json.Unmarshal([]byte(r.raw), &page); err != nil {
			s.t.Fatal(err)
		}
		all = append(all, page.Jobs...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// query returns the text of every item q finds, following next_cursor.
func (s session) query(q string) []string {
	s.t.Helper()
	var texts []string
	cursor := ""
	for {
		var page struct {
			Results []struct {
				Text string `json:"text"`
			} `json:"results"`
			NextCursor string `json:"next_cursor"`
		}
		r := s.do("GET", "/api/v1/memory/query?limit=100&q="+url.QueryEscape(q)+"&cursor="+cursor, nil).want(s.t, 200, "query "+q)
		if err := json.Unmarshal([]byte(r.raw), &page); err != nil {
			s.t.Fatal(err)
		}
		for _, res := range page.Results {
			texts = append(texts, res.Text)
		}
		if page.NextCursor == "" {
			slices.Sort(texts)
			return texts
		}
		cursor = page.NextCursor
	}
}

// A batch goes in, its job succeeds, its items are found; the same batch
// again answers the same job, replayed, and makes nothing new.
func TestIngestEndToEnd(t *testing.T) {
	t.Parallel() // mostly waits for the queue, beside the other ingest tests
	base, _ := MustRunServer(t, memoryEnv(nil))
	s := loginAdmin(t, base)
	batch := map[string]any{"project": "e2e", "items": []map[string]any{
		{"text": "The heron waits by the weir at dawn"},
		{"text": "Sourdough wants a warm kitchen", "kind": "recipe", "tags": []string{"bread"}},
		{"text": "A heron again, this time on the roof"},
	}}

	first := s.ingest(batch)
	id := s.accepted(first, false)
	if first.str("status") != "queued" {
		t.Errorf("a new batch's status is %q, want queued", first.str("status"))
	}
	if j := s.waitJob(id, serverWork); j.ItemsTotal != 3 {
		t.Fatalf("the job has %d items, want 3", j.ItemsTotal)
	}
	if got := s.query("SOURDOUGH"); !slices.Equal(got, []string{"Sourdough wants a warm kitchen"}) {
		t.Fatalf("query sourdough found %q", got)
	}
	herons := []string{"A heron again, this time on the roof", "The heron waits by the weir at dawn"}
	if got := s.query("heron"); !slices.Equal(got, herons) {
		t.Fatalf("query heron found %q, want %q", got, herons)
	}

	again := s.ingest(batch)
	if s.accepted(again, true) != id || again.str("ingest_id") != first.str("ingest_id") || again.str("status") != "succeeded" {
		t.Fatalf("the batch again answered %s, want job %s, replayed and succeeded", again.raw, id)
	}
	if jobs := s.jobs(); len(jobs) != 1 || jobs[0].JobID != id {
		t.Fatalf("GET /jobs lists %+v, want only job %s", jobs, id)
	}
	if got := s.query("heron"); !slices.Equal(got, herons) {
		t.Fatalf("after the replay, query heron found %q, want %q", got, herons)
	}
}
