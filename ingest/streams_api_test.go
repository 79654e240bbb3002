// The memory example's streams: its events are declared, a job's log
// after a gap, and HEAD on a job's log.

package ingest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
)

// Every event a stream sends is one its operation declares in the spec,
// and every declared event is sent by some path through the server: the
// spec and the streams cannot drift apart.
func TestStreamEventsAreDeclared(t *testing.T) {
	hub := streams.NewMemoryHub(1, 64)
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub)})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	s := l.Server
	declared := declaredEvents(t, s)
	if len(declared) < 2 {
		t.Fatalf("the spec declares streams %v", declared)
	}
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	seen := map[string]map[string]bool{}
	saw := func(path string, m apitest.Message) apitest.Message {
		if seen[path] == nil {
			seen[path] = map[string]bool{}
		}
		seen[path][m.Event] = true
		return m
	}
	const events, live = "/api/v1/events", "/api/v1/system/live"
	ev, _ := l.OpenStream(events, ada)
	lv, _ := l.OpenStream(live, ada)
	var k struct{ ID string }
	l.Call("POST", "/api/v1/apikeys", map[string]string{"name": "one"}, ada).Want(t, 201, "create").Decode(t, &k)
	first := saw(events, ev.NextEvent(t))
	l.Call("DELETE", "/api/v1/apikeys/"+k.ID, nil, ada).Want(t, 204, "delete")
	saw(events, ev.NextEvent(t))
	saw(live, lv.NextEvent(t))
	l.Call("POST", "/api/v1/apikeys", map[string]string{"name": "two"}, ada).Want(t, 201, "create")
	gap, _ := l.OpenStream(events, ada, "Last-Event-ID: "+first.ID) // the hub keeps 1: the deletion is gone
	saw(events, gap.NextEvent(t))
	saw(events, gap.NextEvent(t)) // the creation the hub kept

	// A job's life: queued, its log's first state, its steps, its end; and
	// a job that fails.
	const jobLog = "/api/v1/jobs/{id}/log"
	ingestOne := func(text string) string {
		var a struct {
			JobID string `json:"job_id"`
		}
		l.Call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": text}}}, ada).
			Want(t, 202, "ingest").Decode(t, &a)
		saw(events, gap.NextEvent(t)) // job.queued
		return a.JobID
	}
	ok, bad, cut := ingestOne("one"), ingestOne("two"), ingestOne("three")
	okLog, _ := l.OpenStream("/api/v1/jobs/"+ok+"/log", ada)
	saw(jobLog, okLog.NextEvent(t)) // its state: job.progress
	if err := memory.Process(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	for m := saw(jobLog, okLog.NextEvent(t)); m.Event != "job.succeeded"; m = saw(jobLog, okLog.NextEvent(t)) {
	}
	for m := saw(events, gap.NextEvent(t)); m.Event != "memory.ingested"; m = saw(events, gap.NextEvent(t)) {
	}
	badLog, _ := l.OpenStream("/api/v1/jobs/"+bad+"/log", ada)
	saw(jobLog, badLog.NextEvent(t))
	if err := memory.Fail(context.Background(), bad, "a test"); err != nil {
		t.Fatal(err)
	}
	for m := saw(jobLog, badLog.NextEvent(t)); m.Event != "job.failed"; m = saw(jobLog, badLog.NextEvent(t)) {
	}
	saw(events, gap.NextEvent(t)) // job.failed
	cutLog, _ := l.OpenStream("/api/v1/jobs/"+cut+"/log", ada)
	saw(jobLog, cutLog.NextEvent(t))

	l.Streams.CloseStreams(context.Background())
	for _, st := range []struct {
		path string
		s    *apitest.Stream
	}{{events, ev}, {live, lv}, {jobLog, cutLog}} {
		for m := saw(st.path, st.s.NextEvent(t)); m.Event != "stream.closing"; m = saw(st.path, st.s.NextEvent(t)) {
		}
	}
	for path, names := range declared {
		for name := range seen[path] {
			if !slices.Contains(names, name) {
				t.Errorf("%s sent %s, which its spec does not declare (%v)", path, name, names)
			}
		}
		for _, name := range names {
			if !seen[path][name] {
				t.Errorf("%s declares %s, which no path of this test made it send", path, name)
			}
		}
	}
}

// A gap marker of the hub (an outage cost some events) reaches the
// streams as the client needs it: GET /api/v1/events sends stream.gap,
// with the marker's id and the id of the last event it had, and a job's
// log, whose steps were lost, sends the job as the database has it, here
// its end.
func TestStreamGapMarker(t *testing.T) {
	hub := streams.NewMemoryHub(16, 16)
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	lost := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{}) // its events go nowhere: an outage
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(lost)}}, apitest.Streams(streams.Config{Hub: hub}))
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	var a struct {
		JobID string `json:"job_id"`
	}
	l.Call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": "one"}}}, ada).
		Want(t, 202, "ingest").Decode(t, &a)
	events, _ := l.OpenStream("/api/v1/events", ada)
	jobLog, _ := l.OpenStream("/api/v1/jobs/"+a.JobID+"/log", ada)
	if m := jobLog.NextEvent(t); m.Event != "job.progress" {
		t.Fatalf("the job log starts with %+v", m)
	}
	l.Call("POST", "/api/v1/apikeys", map[string]string{"name": "k"}, ada).Want(t, 201, "create a key")
	last := events.NextEvent(t)
	if err := lost.Process(context.Background(), a.JobID); err != nil {
		t.Fatal(err)
	}
	id, err := hub.Publish(context.Background(), streams.Event{Type: streams.EventGap, To: adaID(t, l, ada)})
	if err != nil {
		t.Fatal(err)
	}
	if m := events.NextEvent(t); m.Event != "stream.gap" || m.ID != id || m.Data != `{"after":"`+last.ID+`"}` {
		t.Fatalf("events after the marker: %+v; want stream.gap %s after %s", m, id, last.ID)
	}
	if m := jobLog.NextEvent(t); m.Event != "job.succeeded" || !strings.Contains(m.Data, a.JobID) {
		t.Fatalf("the job log after the marker: %+v; want its end, job.succeeded, read from the database", m)
	}
	if _, err := jobLog.Rest(); err != nil {
		t.Fatalf("the job log did not end with its job: %v", err)
	}
}

// declaredEvents reads the event names the spec declares for each stream
// path.
func declaredEvents(tb testing.TB, s *api.Server) map[string][]string {
	tb.Helper()
	spec, err := s.Spec()
	if err != nil {
		tb.Fatal(err)
	}
	type events struct {
		OneOf []struct {
			Properties struct {
				Event struct{ Enum []string }
			}
		}
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Events struct {
						Ref string `json:"$ref"`
					} `json:"x-events"`
				}
			}
		}
		Components struct{ Schemas map[string]events }
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		tb.Fatal(err)
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		if c, ok := item["get"].Responses["200"].Content["text/event-stream"]; ok {
			for _, one := range doc.Components.Schemas[strings.TrimPrefix(c.Events.Ref, "#/components/schemas/")].OneOf {
				out[path] = append(out[path], one.Properties.Event.Enum...)
			}
		}
	}
	return out
}

// adaID is the user id of the session cookie.
func adaID(tb testing.TB, l *live, cookie string) string {
	tb.Helper()
	var me struct{ User struct{ ID string } }
	l.Call("GET", "/api/v1/auth/me", nil, cookie).Want(tb, 200, "me").Decode(tb, &me)
	return me.User.ID
}

// HEAD on a stream answers what GET would start with, headers only: the
// same status (a job's log: 404 for no such job, 204 for one ended), and
// no stream.
func TestStreamHeadIsGetWithoutTheStream(t *testing.T) {
	l, memory, ada := memoryServer(t)
	var a accepted
	l.Call("POST", "/api/v1/memory/ingest", json.RawMessage(`{"project":"p","items":[{"text":"x"}]}`), ada).Want(t, 202, "ingest").Decode(t, &a)
	r := l.Call("HEAD", "/api/v1/jobs/"+a.JobID+"/log", nil, ada).Want(t, http.StatusOK, "HEAD on a queued job's log")
	if r.Header.Get("Content-Type") != "text/event-stream" || r.Body != "" {
		t.Fatalf("HEAD: %v %q", r.Header, r.Body)
	}
	l.Call("HEAD", "/api/v1/jobs/00000000-0000-4000-8000-000000000000/log", nil, ada).Want(t, http.StatusNotFound, "HEAD on no job's log")
	if err := memory.Process(context.Background(), a.JobID); err != nil {
		t.Fatal(err)
	}
	l.Call("HEAD", "/api/v1/jobs/"+a.JobID+"/log", nil, ada).Want(t, http.StatusNoContent, "HEAD on an ended job's log")
	l.Call("HEAD", "/api/v1/events", nil, ada).Want(t, http.StatusOK, "HEAD on the events")
	l.Call("HEAD", "/api/v1/events", nil).Want(t, http.StatusUnauthorized, "HEAD on the events without credentials")
}
