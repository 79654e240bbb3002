package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// A job's log resumes exactly once, the job's end included, whenever the
// client comes back: every event it sends has an id (the first state's
// too), a resume from any of them after the job ended gets the rest and
// the end, a resume from the end gets 204, and one whose steps the hub
// ingestThreeChunks sends a batch whose job stores it in three chunks
// (three steps, then the end) and returns the job's id.
func ingestThreeChunks(t *testing.T, l *live, cookie string) string {
	t.Helper()
	items := make([]map[string]string, 250)
	for i := range items {
		items[i] = map[string]string{"text": fmt.Sprint("note ", i)}
	}
	var a struct {
		JobID string `json:"job_id"`
	}
	l.call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": items}, cookie).want(t, 202, "ingest").decode(t, &a)
	return a.JobID
}

// no longer keeps gets the job's end as the database has it.
func TestJobLogResumesAfterItsEnd(t *testing.T) {
	hub := streams.NewMemoryHub(1024, 64)
	svc := MustAuth(t)
	db, _ := dbOf.Load(svc)
	memory := ingest.NewService(ingest.NewSQLStore(db.(*store.DB), nil), ingest.Config{Publish: ingest.Publisher(hub)})
	_, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, Streams: api.StreamConfig{Hub: hub}}, nil)
	ada := l.login("ada", "correct horse battery").cookie(t)
	jobID := ingestThreeChunks(t, l, ada)
	logPath := "/api/v1/jobs/" + jobID + "/log"

	// readToEnd reads a log's events until its connection closes, each
	// with an id.
	readToEnd := func(s *sse) []sseMessage {
		t.Helper()
		var got []sseMessage
		for {
			m := s.nextEvent(t)
			if m.id == "" {
				t.Fatalf("an event without an id: %+v", m)
			}
			got = append(got, m)
			if m.event != "job.progress" {
				break
			}
		}
		if rest, err := io.ReadAll(s.rd); err != nil || len(rest) != 0 {
			t.Fatalf("after the job's end the log sent %q (%v); want its end", rest, err)
		}
		return got
	}

	follow, _ := l.openStream(logPath, ada)
	first := follow.nextEvent(t)
	if first.event != "job.progress" || first.id == "" {
		t.Fatalf("the log's first event is %+v; want the job's state, with an id", first)
	}
	l.call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": "another job"}}}, ada).
		want(t, 202, "another job's events interleave")
	if err := memory.Process(context.Background(), jobID); err != nil {
		t.Fatal(err)
	}
	whole := append([]sseMessage{first}, readToEnd(follow)...)
	if len(whole) != 5 || whole[4].event != "job.succeeded" {
		t.Fatalf("the log = %+v; want its state, three steps and job.succeeded", whole)
	}

	for i := range len(whole) - 1 {
		s, r := l.openStream(logPath, ada, "Last-Event-ID: "+whole[i].id)
		if s == nil {
			t.Fatalf("resume after event %d (%s) of an ended job: %d %s; want the rest of its log", i, whole[i].event, r.status, r.body)
		}
		got := readToEnd(s)
		if len(got) != len(whole)-1-i {
			t.Fatalf("resume after event %d: %+v; want %+v", i, got, whole[i+1:])
		}
		for j, m := range got {
			if w := whole[i+1+j]; m != w {
				t.Fatalf("resume after event %d: event %d is %+v; want %+v", i, j, m, w)
			}
		}
	}
	if _, r := l.openStream(logPath, ada, "Last-Event-ID: "+whole[4].id); r.status != http.StatusNoContent {
		t.Fatalf("resume after the job's end: %d %s; want 204, nothing more", r.status, r.body)
	}
	if _, r := l.openStream(logPath, ada); r.status != http.StatusNoContent {
		t.Fatalf("an ended job's log without Last-Event-ID: %d %s; want 204", r.status, r.body)
	}

	// An id older than every event the hub keeps: the steps may be lost,
	// so the job as the database has it, its end, stands for them.
	s, r := l.openStream(logPath, ada, "Last-Event-ID: 1-0")
	if s == nil {
		t.Fatalf("resume from before what the hub keeps: %d %s; want the job's end", r.status, r.body)
	}
	if got := readToEnd(s); len(got) != 1 || got[0].event != "job.succeeded" {
		t.Fatalf("resume from before what the hub keeps: %+v; want job.succeeded", got)
	}
}

// A job whose end the database has but the hub never got (the process
// died between the two, or the publish was lost): a resume from the
// middle of its log gets the steps the hub kept, then the end as the
// database has it, and the log ends; a resume from that end is told the
// log is over (204), so a client does not come back for it forever.
func TestJobLogResumeEndsWhenTheEndWasNotPublished(t *testing.T) {
	hub := streams.NewMemoryHub(1024, 64)
	svc := MustAuth(t)
	db, _ := dbOf.Load(svc)
	publish := ingest.Publisher(hub)
	lost := func(ctx context.Context, user, name string, data any) { // every end is lost
		if name != ingest.EventJobSucceeded && name != ingest.EventMemoryIngested {
			publish(ctx, user, name, data)
		}
	}
	memory := ingest.NewService(ingest.NewSQLStore(db.(*store.DB), nil), ingest.Config{Publish: lost})
	_, l, _ := streamServerWith(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, Streams: api.StreamConfig{Hub: hub}}, nil)
	ada := l.login("ada", "correct horse battery").cookie(t)
	jobID := ingestThreeChunks(t, l, ada)
	logPath := "/api/v1/jobs/" + jobID + "/log"

	follow, _ := l.openStream(logPath, ada)
	defer follow.close()
	follow.nextEvent(t) // the job's state
	if err := memory.Process(context.Background(), jobID); err != nil {
		t.Fatal(err)
	}
	var steps []sseMessage
	for range 3 {
		steps = append(steps, follow.nextEvent(t))
	}

	// ended reads the stream's events to its end, failing the test when
	// it has not ended within 5 s.
	ended := func(s *sse) []sseMessage {
		t.Helper()
		done := make(chan []sseMessage, 1)
		go func() {
			var got []sseMessage
			rest, _ := io.ReadAll(s.rd)
			for _, block := range strings.Split(string(rest), "\n\n") {
				var m sseMessage
				for _, line := range strings.Split(block, "\n") {
					if v, ok := strings.CutPrefix(line, "id: "); ok {
						m.id = v
					} else if v, ok := strings.CutPrefix(line, "event: "); ok {
						m.event = v
					}
				}
				if m.event != "" {
					got = append(got, m)
				}
			}
			done <- got
		}()
		select {
		case got := <-done:
			return got
		case <-time.After(5 * time.Second):
			s.close()
			t.Fatal("the log did not end within 5 s after the job's end")
			return nil
		}
	}

	s, r := l.openStream(logPath, ada, "Last-Event-ID: "+steps[0].id)
	if s == nil {
		t.Fatalf("resume from the first step: %d %s; want the rest of the log", r.status, r.body)
	}
	got := ended(s)
	if len(got) != 3 || got[0].id != steps[1].id || got[1].id != steps[2].id || got[2].event != "job.succeeded" || got[2].id == "" {
		t.Fatalf("resume from the first step: %+v; want the two steps after it, then job.succeeded with an id", got)
	}
	if _, r := l.openStream(logPath, ada, "Last-Event-ID: "+got[2].id); r.status != http.StatusNoContent {
		t.Fatalf("resume from the end the database gave: %d %s; want 204", r.status, r.body)
	}
}
