package ingest

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
)

// addJobLog declares the job log's stream, GET /api/v1/jobs/{id}/log.
func addJobLog(s *api.Server, svc *Service) {
	l := &jobLog{svc: svc}
	streams.Add(s, streams.Operation{
		Operation: huma.Operation{
			OperationID: "follow-job-log", Path: api.Prefix + "/jobs/{id}/log",
			Summary: "Follow a job",
			Description: "One of your jobs until it ends: first its state now (job.progress), then each step, then job.succeeded or job.failed, " +
				"after which the stream ends. Every event has an id: on reconnect, send the last id received as Last-Event-ID and the log goes on from there, exactly once, " +
				"the job's end included when it ended meanwhile (where its steps were lost, the job's state now stands for them). " +
				"A job that has ended answers 204 when there is nothing left to send (no Last-Event-ID, or the client has the end): its result is at GET /api/v1/jobs/{id}, and a browser's EventSource stops reconnecting. " +
				"Shares the stream plane's caps and open budget with every stream endpoint.",
			Responses: map[string]*huma.Response{"204": {Description: "The job has ended: GET /api/v1/jobs/{id} has its result."}},
			Parameters: []*huma.Param{{Name: "id", In: "path", Required: true, Description: "The job's id.",
				Schema: &huma.Schema{Type: huma.TypeString, Pattern: uuidPattern, MaxLength: new(36), Examples: []any{"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d"}}}},
			Errors: []int{http.StatusNotFound},
		},
		Events: []streams.EventType{jobProgress, jobSucceeded, jobFailed},
		Serve:  l.serve,
	})
}

type jobLog struct{ svc *Service }

// serve sends one job's progress until it ends: the job's state from the
// database (for a new log, or for steps the hub lost), the hub's replayed
// steps, then the live ones.
func (l *jobLog) serve(st *streams.Stream) {
	r := st.Request()
	id, user := chi.URLParam(r, "id"), st.Caller().User.ID
	if !isUUID(id) {
		st.Refuse(api.NewError(http.StatusUnprocessableEntity, "", api.FieldError{Location: "path.id", Message: "not a job id: a UUID, as the ingest answered"}))
		return
	}
	// Subscribed first, so no step falls between it and the read.
	sub, ok := st.Subscribe()
	if !ok {
		return
	}
	defer sub.Close()
	job, err := l.svc.Job(r.Context(), user, id)
	switch {
	case errors.Is(err, ErrNotFound):
		st.Refuse(api.NewError(http.StatusNotFound, "you have no job with that id"))
		return
	case err != nil:
		st.Unavailable(err)
		return
	}
	resumed := st.LastEventID() != ""
	steps, gap := jobSteps(sub, id)
	if job.Status.Final() && !gap && len(steps) == 0 {
		// 204, so a browser's EventSource stops reconnecting.
		st.NoContent()
		return
	}
	if st.Start() != nil {
		return
	}
	if !catchUp(st, job, sub.At, steps, !resumed || gap) {
		return
	}
	streams.Pump(st, sub.Events(), l.follow(st, user, id))
}

// catchUp sends what a log has before its live steps: the job's state
// (when withState), the replayed steps, and the database's end when they
// lack it. It reports whether the log goes on.
func catchUp(st *streams.Stream, job Job, at string, steps []streams.Event, withState bool) bool {
	if withState && sendJobState(st, job, at) != nil {
		return false
	}
	for i := range steps {
		if err := st.SendEvent(&steps[i]); err != nil || steps[i].Type != jobProgress.Name {
			return false
		}
	}
	if job.Status.Final() {
		_ = sendJobState(st, job, at)
		return false
	}
	return true
}

// follow sends the hub's live steps of job id, up to its end; after a gap,
// the job read again.
func (l *jobLog) follow(st *streams.Stream, user, id string) func(ev *streams.Event, ok bool) error {
	return func(ev *streams.Event, ok bool) error {
		if !ok {
			st.CloseSlow()
			return streams.ErrEnded
		}
		if ev.Type == streams.EventGap {
			job, err := l.svc.Job(st.Request().Context(), user, id)
			if err != nil {
				st.Unavailable(err)
				return streams.ErrEnded
			}
			return sendJobState(st, job, cmp.Or(ev.ID, st.LastSent()))
		}
		if !isJobStep(ev, id) {
			return nil
		}
		if err := st.Send(ev.ID, ev.Type, ev.Data); err != nil {
			return err
		}
		if ev.Type != jobProgress.Name {
			return streams.ErrEnded
		}
		return nil
	}
}

// jobSteps returns the steps of job id that sub replays, up to its end,
// and whether some may be lost.
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
			if ev.Type != jobProgress.Name {
				break
			}
		}
	}
	return steps, false
}

func isJobStep(ev *streams.Event, id string) bool {
	if ev.Type != jobProgress.Name && ev.Type != jobSucceeded.Name && ev.Type != jobFailed.Name {
		return false
	}
	var about struct {
		JobID string `json:"job_id"`
	}
	return json.Unmarshal(ev.Data, &about) == nil && about.JobID == id
}

// sendJobState sends job as the database has it with the id at; an end
// ends the log (streams.ErrEnded).
func sendJobState(st *streams.Stream, job Job, at string) error {
	var (
		name string
		v    any
	)
	switch job.Status {
	case StatusSucceeded:
		name, v = jobSucceeded.Name, JobSucceeded{JobID: job.ID, ItemsTotal: job.ItemsTotal}
	case StatusFailed:
		name, v = jobFailed.Name, JobFailed{JobID: job.ID, ItemsDone: job.ItemsDone, Error: job.Error}
	default:
		name, v = jobProgress.Name, JobProgress{JobID: job.ID, ItemsDone: job.ItemsDone, ItemsTotal: job.ItemsTotal}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := st.Send(at, name, b); err != nil || name != jobProgress.Name {
		return streams.ErrEnded
	}
	return nil
}
