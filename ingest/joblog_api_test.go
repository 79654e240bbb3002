package ingest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
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
	l.Call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": items}, cookie).Want(t, 202, "ingest").Decode(t, &a)
	return a.JobID
}

// no longer keeps gets the job's end as the database has it.
func TestJobLogResumesAfterItsEnd(t *testing.T) {
	hub := streams.NewMemoryHub(1024, 64)
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub)})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	jobID := ingestThreeChunks(t, l, ada)
	logPath := "/api/v1/jobs/" + jobID + "/log"

	// readToEnd reads a log's events until its connection closes, each
	// with an id.
	readToEnd := func(s *apitest.Stream) []apitest.Message {
		t.Helper()
		var got []apitest.Message
		for {
			m := s.NextEvent(t)
			if m.ID == "" {
				t.Fatalf("an event without an id: %+v", m)
			}
			got = append(got, m)
			if m.Event != "job.progress" {
				break
			}
		}
		if rest, err := s.Rest(); err != nil || len(rest) != 0 {
			t.Fatalf("after the job's end the log sent %q (%v); want its end", rest, err)
		}
		return got
	}

	follow, _ := l.OpenStream(logPath, ada)
	first := follow.NextEvent(t)
	if first.Event != "job.progress" || first.ID == "" {
		t.Fatalf("the log's first event is %+v; want the job's state, with an id", first)
	}
	l.Call("POST", "/api/v1/memory/ingest", map[string]any{"project": "p", "items": []map[string]string{{"text": "another job"}}}, ada).
		Want(t, 202, "another job's events interleave")
	if err := memory.Process(context.Background(), jobID); err != nil {
		t.Fatal(err)
	}
	whole := append([]apitest.Message{first}, readToEnd(follow)...)
	if len(whole) != 5 || whole[4].Event != "job.succeeded" {
		t.Fatalf("the log = %+v; want its state, three steps and job.succeeded", whole)
	}

	for i := range len(whole) - 1 {
		s, r := l.OpenStream(logPath, ada, "Last-Event-ID: "+whole[i].ID)
		if s == nil {
			t.Fatalf("resume after event %d (%s) of an ended job: %d %s; want the rest of its log", i, whole[i].Event, r.Status, r.Body)
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
	if _, r := l.OpenStream(logPath, ada, "Last-Event-ID: "+whole[4].ID); r.Status != http.StatusNoContent {
		t.Fatalf("resume after the job's end: %d %s; want 204, nothing more", r.Status, r.Body)
	}
	if _, r := l.OpenStream(logPath, ada); r.Status != http.StatusNoContent {
		t.Fatalf("an ended job's log without Last-Event-ID: %d %s; want 204", r.Status, r.Body)
	}

	// An id older than every event the hub keeps: the steps may be lost,
	// so the job as the database has it, its end, stands for them.
	s, r := l.OpenStream(logPath, ada, "Last-Event-ID: 1-0")
	if s == nil {
		t.Fatalf("resume from before what the hub keeps: %d %s; want the job's end", r.Status, r.Body)
	}
	if got := readToEnd(s); len(got) != 1 || got[0].Event != "job.succeeded" {
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
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	publish := ingest.Publisher(hub)
	lost := func(ctx context.Context, user, name string, data any) { // every end is lost
		if name != ingest.EventJobSucceeded && name != ingest.EventMemoryIngested {
			publish(ctx, user, name, data)
		}
	}
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: lost})
	l := apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	ada := l.Login("ada", "correct horse battery").Cookie(t)
	jobID := ingestThreeChunks(t, l, ada)
	logPath := "/api/v1/jobs/" + jobID + "/log"

	follow, _ := l.OpenStream(logPath, ada)
	defer follow.Close()
	follow.NextEvent(t) // the job's state
	if err := memory.Process(context.Background(), jobID); err != nil {
		t.Fatal(err)
	}
	var steps []apitest.Message
	for range 3 {
		steps = append(steps, follow.NextEvent(t))
	}

	// ended reads the stream's events to its end, failing the test when
	// it has not ended within 5 s.
	ended := func(s *apitest.Stream) []apitest.Message {
		t.Helper()
		done := make(chan []apitest.Message, 1)
		go func() {
			var got []apitest.Message
			rest, _ := s.Rest()
			for _, block := range strings.Split(string(rest), "\n\n") {
				var m apitest.Message
				for _, line := range strings.Split(block, "\n") {
					if v, ok := strings.CutPrefix(line, "id: "); ok {
						m.ID = v
					} else if v, ok := strings.CutPrefix(line, "event: "); ok {
						m.Event = v
					}
				}
				if m.Event != "" {
					got = append(got, m)
				}
			}
			done <- got
		}()
		select {
		case got := <-done:
			return got
		case <-time.After(5 * time.Second):
			s.Close()
			t.Fatal("the log did not end within 5 s after the job's end")
			return nil
		}
	}

	s, r := l.OpenStream(logPath, ada, "Last-Event-ID: "+steps[0].ID)
	if s == nil {
		t.Fatalf("resume from the first step: %d %s; want the rest of the log", r.Status, r.Body)
	}
	got := ended(s)
	if len(got) != 3 || got[0].ID != steps[1].ID || got[1].ID != steps[2].ID || got[2].Event != "job.succeeded" || got[2].ID == "" {
		t.Fatalf("resume from the first step: %+v; want the two steps after it, then job.succeeded with an id", got)
	}
	if _, r := l.OpenStream(logPath, ada, "Last-Event-ID: "+got[2].ID); r.Status != http.StatusNoContent {
		t.Fatalf("resume from the end the database gave: %d %s; want 204", r.Status, r.Body)
	}
}
