package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// The events of GET /api/v1/events. A handler publishes one with
// publishEvent; the stream sends only the types its operation declares.
var (
	apiKeyCreated = eventType{name: "apikey.created", data: APIKeyView{}, doc: "You created an API key (its secret is never sent again)."}
	apiKeyDeleted = eventType{name: "apikey.deleted", data: DeletedEvent{}, doc: "You deleted an API key."}
	gapEvent      = eventType{name: "stream.gap", data: GapEvent{}, doc: "Some of your events after `after` may be lost: reload what they would have changed. It is the first event when Last-Event-ID is older than the oldest event kept, or not one this server knows (after a restart, say); and it comes live, or replayed, when an outage of the event store cost events (with an id when it marks a place in the events, so a resume after it does not repeat it)."}
	liveEvent     = eventType{name: "system.live", data: LiveSnapshot{}, doc: "The server's state, every second."}
)

// The job events, on GET /api/v1/events and on each job's log.
var (
	jobQueued      = eventType{name: ingest.EventJobQueued, data: ingest.JobQueued{}, doc: "A batch you sent was accepted: its job is queued."}
	jobProgress    = eventType{name: ingest.EventJobProgress, data: ingest.JobProgress{}, doc: "A job stored more of its items. On a job's log opened without Last-Event-ID, the first event gives its state when the stream started, with an id to resume from like any other."}
	jobSucceeded   = eventType{name: ingest.EventJobSucceeded, data: ingest.JobSucceeded{}, doc: "A job stored all of its items. On a job's log, the last event."}
	jobFailed      = eventType{name: ingest.EventJobFailed, data: ingest.JobFailed{}, doc: "A job ended without storing all of its items. On a job's log, the last event."}
	memoryIngested = eventType{name: ingest.EventMemoryIngested, data: ingest.MemoryIngested{}, doc: "A project has new items to find."}
)

// userEvents are the events a caller's GET /api/v1/events may carry, by
// name: what EventPublisher accepts.
var userEvents = map[string]eventType{}

func init() {
	for _, e := range []eventType{apiKeyCreated, apiKeyDeleted, jobQueued, jobProgress, jobSucceeded, jobFailed, memoryIngested} {
		userEvents[e.name] = e
	}
}

// EventPublisher returns the function that publishes a user's events to
// hub (ingest.Config.Publish): an event of a type GET /api/v1/events does
// not declare, or whose data is not its declared type, is logged and
// dropped.
func EventPublisher(hub streams.Hub) func(ctx context.Context, userID, eventType string, data any) {
	return func(ctx context.Context, userID, name string, data any) {
		e, ok := userEvents[name]
		if !ok {
			logger(ctx).Error("stream: an event of a type no stream declares", "event", name)
			return
		}
		publishEvent(ctx, hub, e, userID, data)
	}
}

// DeletedEvent names what was deleted.
type DeletedEvent struct {
	ID string `json:"id" doc:"The id of what was deleted."`
}

// GapEvent says events may have been lost between the last event the
// stream had and the events that follow.
type GapEvent struct {
	After string `json:"after" doc:"The id of the last event the stream had before the gap: the last one it sent, else the Last-Event-ID the client sent; empty when it had none."`
}

// LiveSnapshot is the data of a system.live event.
type LiveSnapshot struct {
	At           time.Time `json:"at"`
	RequestsPerS float64   `json:"requests_per_s" doc:"Requests this replica answered per second, over the last second."`
	LimitedPerS  float64   `json:"limited_per_s" doc:"Of those, refused with 429, per second."`
	OpenStreams  int64     `json:"open_streams" doc:"Streams open on this replica, this one included."`
	JobsQueued   int64     `json:"jobs_queued" doc:"Jobs of every user waiting for a worker, on every replica (the database's count, read at most once a second; the last count read while the database does not answer)."`
	Goroutines   int       `json:"goroutines"`
	HeapBytes    uint64    `json:"heap_bytes" doc:"Bytes of live and not yet collected heap objects."`
}

// addStreamRoutes registers every stream endpoint.
func (s *Server) addStreamRoutes(cfg Config) {
	tags := tagged(s.API, "Streams", "Server-Sent Events: your events, a job's progress, the server's state, live.")
	s.addStream(streamOperation{
		op: huma.Operation{
			OperationID: "follow-events", Path: Prefix + "/events", Tags: tags,
			Summary: "Follow your events",
			Description: "Your events as they happen, each with an id. On reconnect, send the last id received as Last-Event-ID (browsers do): " +
				"the events after it that are still kept come first, or stream.gap says some are lost. " +
				"Every stream endpoint shares the stream plane (x-rate-limit, plane stream): the open streams of your session or API key (streams), " +
				"those of your user, counting all of its sessions and API keys (streams-per-user), and the streams your session or API key may open (stream-opens); " +
				"past any of them a stream is refused with 429 before it starts.",
		},
		events: []eventType{apiKeyCreated, apiKeyDeleted, jobQueued, jobProgress, jobSucceeded, jobFailed, memoryIngested, gapEvent},
		serve:  s.serveEvents,
	})
	s.addStream(streamOperation{
		op: huma.Operation{
			OperationID: "follow-job-log", Path: Prefix + "/jobs/{id}/log", Tags: tags,
			Summary: "Follow a job",
			Description: "One of your jobs until it ends: first its state now (job.progress), then each step, then job.succeeded or job.failed, " +
				"after which the stream ends. Every event has an id: on reconnect, send the last id received as Last-Event-ID and the log goes on from there, exactly once, " +
				"the job's end included when it ended meanwhile (where its steps were lost, the job's state now stands for them). " +
				"A job that has ended answers 204 when there is nothing left to send (no Last-Event-ID, or the client has the end): its result is at GET /api/v1/jobs/{id}, and a browser's EventSource stops reconnecting. " +
				"Shares the stream plane's caps and open budget with every stream endpoint.",
			Responses: map[string]*huma.Response{"204": {Description: "The job has ended: GET /api/v1/jobs/{id} has its result."}},
			Parameters: []*huma.Param{{Name: "id", In: "path", Required: true, Description: "The job's id.",
				Schema: &huma.Schema{Type: huma.TypeString, Pattern: uuidPattern, MaxLength: ptr(36)}}},
			Errors: []int{http.StatusNotFound},
		},
		events: []eventType{jobProgress, jobSucceeded, jobFailed},
		serve:  s.serveJobLog,
	})
	who := "Any caller (a session or an API key) may follow it: it shows the server's load, not any user's data (BRAIN_LIVE_ACCESS=admin restricts it to the user admin)."
	if cfg.LiveAccess == Admin {
		who = "Only the user admin may follow it (BRAIN_LIVE_ACCESS=admin); any other caller gets 403."
	}
	s.addStream(streamOperation{
		op: huma.Operation{
			OperationID: "follow-system-live", Path: Prefix + "/system/live", Tags: tags,
			Summary: "Follow the server's state",
			Description: "A snapshot of this replica every second: requests and refusals per second, open streams, jobs queued, goroutines, heap. " + who +
				" Shares the stream plane's caps and open budget with every stream endpoint.",
		},
		access: cfg.LiveAccess,
		events: []eventType{liveEvent},
		serve:  s.serveLive,
	})
}

// serveEvents sends the caller's events: those kept after Last-Event-ID
// first, then each as it is published.
func (s *Server) serveEvents(st *stream) {
	sub, err := s.streams.cfg.Hub.Subscribe(st.r.Context(), st.caller.User.ID, st.lastEventID)
	if err != nil {
		s.outages.log(st.r.Context(), err)
		WriteError(st.w, NewError(503, "brain cannot follow events right now; retry shortly"))
		return
	}
	defer sub.Close()
	if st.start() != nil {
		return
	}
	if sub.Gap && st.sendGap("") != nil {
		return
	}
	for i := range sub.Replay {
		if st.sendEvent(&sub.Replay[i]) != nil {
			return
		}
	}
	pump(st, sub.Events(), func(ev *streams.Event, ok bool) error {
		if !ok { // the hub dropped this stream: it fell behind
			st.close("slow")
			return errStreamEnded
		}
		return st.sendEvent(ev)
	})
}

// sendEvent sends one of the hub's events; its gap markers go out as
// stream.gap.
func (st *stream) sendEvent(ev *streams.Event) error {
	if ev.Type == streams.EventGap {
		return st.sendGap(ev.ID)
	}
	return st.send(ev.ID, ev.Type, ev.Data)
}

// sendGap tells the client that events after the last it has may be
// lost: stream.gap, with id when the hub marked the gap in its events. A
// gap right after another says nothing new, and is not sent.
func (st *stream) sendGap(id string) error {
	if st.gapped {
		return nil
	}
	b, err := json.Marshal(GapEvent{After: st.lastSent})
	if err != nil {
		return err
	}
	return st.send(id, gapEvent.name, b)
}

// serveJobLog sends one job's progress until it ends.
//
// Every event of the log has an id, so a client resuming with
// Last-Event-ID gets exactly what it lacks: the job's steps the hub kept
// after that id, ending with the job's end when the job has ended since
// (then the log ends), and the live steps that follow. The first event of
// a log opened without one is the job's state as the database has it,
// whose id is the hub's place when the log subscribed (streams'
// Subscription.At): a resume from it replays what followed. Where the hub
// lost some of the job's steps (a gap), the database's state stands for
// them, with the same kind of id; so does it for the job's end when the
// database has it and the hub does not (the process that ended the job
// stopped before publishing it, or the publish was lost), and the log
// ends.
func (s *Server) serveJobLog(st *stream) {
	id, user := chi.URLParam(st.r, "id"), st.caller.User.ID
	if !jobID.MatchString(id) {
		WriteError(st.w, NewError(http.StatusUnprocessableEntity, "", FieldError{Location: "path.id", Message: "not a job id: a UUID, as the ingest answered"}))
		return
	}
	// Subscribed first, then the job read: no step falls between the two.
	sub, err := s.streams.cfg.Hub.Subscribe(st.r.Context(), user, st.lastEventID)
	if err != nil {
		s.outages.log(st.r.Context(), err)
		WriteError(st.w, NewError(http.StatusServiceUnavailable, "brain cannot follow events right now; retry shortly"))
		return
	}
	defer sub.Close()
	job, err := s.ingest.Job(st.r.Context(), user, id)
	switch {
	case errors.Is(err, ingest.ErrNotFound):
		WriteError(st.w, NewError(http.StatusNotFound, "you have no job with that id"))
		return
	case err != nil:
		s.outages.log(st.r.Context(), err)
		WriteError(st.w, NewError(http.StatusServiceUnavailable, "brain's database does not answer right now; retry shortly"))
		return
	}
	resumed := st.lastEventID != ""
	steps, gap := jobSteps(sub, id)
	if job.Status.Final() && !gap && len(steps) == 0 {
		// The client has the job's end, or never followed it: 204, not a
		// stream, so a browser's EventSource stops reconnecting.
		st.w.WriteHeader(http.StatusNoContent)
		return
	}
	if st.start() != nil {
		return
	}
	if !resumed || gap { // the database's state, for a new log or for the steps lost
		if s.sendJobState(st, job, sub.At) != nil {
			return
		}
	}
	for i := range steps {
		if err := st.sendEvent(&steps[i]); err != nil || steps[i].Type != jobProgress.name {
			return // the job's end ends its log
		}
	}
	if job.Status.Final() { // ended, but its end is not among its steps: the database's end
		_ = s.sendJobState(st, job, sub.At)
		return
	}
	pump(st, sub.Events(), func(ev *streams.Event, ok bool) error {
		if !ok {
			st.close("slow")
			return errStreamEnded
		}
		if ev.Type == streams.EventGap { // its steps may be lost: the database has the job as it is
			return s.readJobState(st, user, id, cmp.Or(ev.ID, st.lastSent))
		}
		if !isJobStep(ev, id) {
			return nil // another job's, or not a step
		}
		if err := st.send(ev.ID, ev.Type, ev.Data); err != nil {
			return err
		}
		if ev.Type != jobProgress.name {
			return errStreamEnded // the job has ended, and its log with it
		}
		return nil
	})
}

// jobSteps returns the steps of job id that sub replays, up to the job's
// end, and whether some may be lost: the hub says so, or replays a gap
// marker.
func jobSteps(sub *streams.Subscription, id string) (steps []streams.Event, gap bool) {
	if sub.Gap {
		return nil, true
	}
	for _, ev := range sub.Replay {
		if ev.Type == streams.EventGap {
			return nil, true
		}
		if isJobStep(&ev, id) {
			steps = append(steps, ev)
			if ev.Type != jobProgress.name {
				break
			}
		}
	}
	return steps, false
}

// isJobStep reports whether ev is a step of job id's log.
func isJobStep(ev *streams.Event, id string) bool {
	if ev.Type != jobProgress.name && ev.Type != jobSucceeded.name && ev.Type != jobFailed.name {
		return false
	}
	var about struct {
		JobID string `json:"job_id"`
	}
	return json.Unmarshal(ev.Data, &about) == nil && about.JobID == id
}

// readJobState reads the job again, after a gap in its log's events, and
// sends it (sendJobState) with the id at. A job that cannot be read ends
// the log (unavailable): the client reconnects.
func (s *Server) readJobState(st *stream, user, id, at string) error {
	job, err := s.ingest.Job(st.r.Context(), user, id)
	if err != nil {
		s.outages.log(st.r.Context(), err)
		st.close("unavailable")
		return errStreamEnded
	}
	return s.sendJobState(st, job, at)
}

// sendJobState sends job as the database has it, with the id at, the
// hub's place that state reflects: the step the events up to at brought
// it to, or its end, which ends the log (errStreamEnded).
func (s *Server) sendJobState(st *stream, job ingest.Job, at string) error {
	var (
		name string
		v    any
	)
	switch job.Status {
	case ingest.StatusSucceeded:
		name, v = jobSucceeded.name, ingest.JobSucceeded{JobID: job.ID, ItemsTotal: job.ItemsTotal}
	case ingest.StatusFailed:
		name, v = jobFailed.name, ingest.JobFailed{JobID: job.ID, ItemsDone: job.ItemsDone, Error: job.Error}
	default:
		name, v = jobProgress.name, ingest.JobProgress{JobID: job.ID, ItemsDone: job.ItemsDone, ItemsTotal: job.ItemsTotal}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := st.send(at, name, b); err != nil || name != jobProgress.name {
		return errStreamEnded
	}
	return nil
}

// jobID is the form of a job's id.
var jobID = regexp.MustCompile(uuidPattern)

// serveLive sends a snapshot every second.
func (s *Server) serveLive(st *stream) {
	if st.start() != nil {
		return
	}
	every := time.NewTicker(time.Second)
	defer every.Stop()
	pump(st, every.C, func(time.Time, bool) error {
		return st.sendValue(liveEvent.name, s.live.snapshot(s))
	})
}

// liveSnapshots computes the snapshot at most once a second, whatever the
// number of streams that send it. The count of queued jobs is read outside
// its lock, by one stream at a time: while it is read, and when it cannot
// be, the streams go on with the last count.
type liveSnapshots struct {
	mu             sync.Mutex
	last           LiveSnapshot
	requests, lims uint64
	counting       bool // a stream is reading the count of queued jobs
}

func (l *liveSnapshots) snapshot(s *Server) LiveSnapshot {
	l.mu.Lock()
	if s.streams.now().Sub(l.last.At) < 900*time.Millisecond || l.counting {
		defer l.mu.Unlock()
		return l.last
	}
	l.counting = true
	queued := l.last.JobsQueued
	l.mu.Unlock()
	if s.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := s.db.QueuedJobs(ctx)
		cancel()
		if err != nil {
			s.outages.log(ctx, err)
		} else {
			queued = n
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counting = false
	now := s.streams.now()
	elapsed := now.Sub(l.last.At)
	req, lim := s.traffic.requests.Load(), s.traffic.limited.Load()
	snap := LiveSnapshot{At: now.UTC(), OpenStreams: int64(s.streams.live()), JobsQueued: queued, Goroutines: runtime.NumGoroutine(), HeapBytes: heapBytes()}
	if !l.last.At.IsZero() && elapsed > 0 {
		snap.RequestsPerS = float64(req-l.requests) / elapsed.Seconds()
		snap.LimitedPerS = float64(lim-l.lims) / elapsed.Seconds()
	}
	l.last, l.requests, l.lims = snap, req, lim
	return snap
}

// heapBytes reads the heap's object bytes without stopping the world
// (runtime.ReadMemStats would).
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// publishEvent publishes an event of type e to user's streams. An event
// that cannot be published is logged and lost: the request that caused it
// has succeeded, and a stream that missed it learns so on reconnect
// (stream.gap) or reloads.
func publishEvent(ctx context.Context, hub streams.Hub, e eventType, user string, data any) {
	if reflect.TypeOf(data) != reflect.TypeOf(e.data) {
		logger(ctx).Error("stream: an event's data is not its declared type", "event", e.name)
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		_, err = hub.Publish(context.WithoutCancel(ctx), streams.Event{Type: e.name, To: user, Data: b})
	}
	if err != nil {
		logger(ctx).Warn("stream: an event was not published", "event", e.name, "error", err)
	}
}
