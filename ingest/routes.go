package ingest

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Rates are what one API key may spend on the memory operations, an hour
// and a second (MEM_RATE_LIMIT_*).
type Rates struct {
	IngestPerHour, QueryPerHour, ProjectsPerHour, PerSecond int
}

// DefaultRates are the rates a field of Config.Rates left 0 takes.
var DefaultRates = Rates{IngestPerHour: 100, QueryPerHour: 1000, ProjectsPerHour: 100, PerSecond: 10}

// budget is the budget name at perHour (none when 0) and r.PerSecond.
func (r Rates) budget(name string, perHour int) api.Budget {
	rates := fmt.Sprintf("%d/s", r.PerSecond)
	if perHour > 0 {
		rates = fmt.Sprintf("%d/h; %s", perHour, rates)
	}
	return api.Budget{Name: name, Default: rates}
}

// IngestRequest is the body of POST /memory/ingest as the spec shows it;
// the handler reads it with Parse.
type IngestRequest struct {
	IngestID string       `json:"ingest_id,omitempty" pattern:"^[0-9a-f]{64}$" maxLength:"64" example:"b3e0fb18a86d443c6eab8b59d9ca5b3fef1d379f0d5e7244fb5c83727abbeafd" doc:"The batch's idempotency key: 64 lowercase hex digits. Leave it out to have it derived: the SHA-256 of the RFC 8785 canonical JSON of the body as sent."`
	Project  string       `json:"project" doc:"The project the items belong to: no control characters, no white space at either end."`
	Items    []IngestItem `json:"items" nullable:"false" doc:"The items."`
}

// TransformSchema states ingest's rules of a batch, and its example: one
// without ingest_id, so a batch edited in the docs' "Try it out" gets its own.
func (IngestRequest) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	label(s.Properties["project"], MaxProjectChars)
	items := s.Properties["items"]
	items.MinItems, items.MaxItems = new(1), new(MaxItems)
	s.Examples = []any{IngestRequest{Project: "garden", Items: []IngestItem{
		{Text: "Repot the basil before the frost", Kind: "task", Skill: "gardening", Tags: []tag{"herbs", "autumn"}}}}}
	return s
}

// IngestItem is one item of a batch.
type IngestItem struct {
	Text       string     `json:"text" example:"Repot the basil before the frost" doc:"The note: not blank (not only white space), no U+0000."`
	Kind       string     `json:"kind,omitempty" example:"task" doc:"What kind of note; note when left out."`
	Skill      string     `json:"skill,omitempty" example:"gardening" doc:"The skill it is about, if any."`
	Tags       []tag      `json:"tags,omitempty" nullable:"false" example:"herbs,autumn" doc:"Its tags, each given once."`
	OccurredAt *time.Time `json:"occurred_at,omitempty" example:"2026-05-13T18:05:00Z" doc:"When what it records happened, to the millisecond; when the batch was accepted if left out. An RFC 3339 date and time: T and Z in either case; a leap second (:60) is taken as the last instant of the second before it (23:59:59.999)."`
}

// TransformSchema states ingest's rules of an item.
func (IngestItem) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	text := s.Properties["text"]
	text.MinLength, text.MaxLength, text.Pattern = new(1), new(MaxTextChars), textPattern
	label(s.Properties["kind"], MaxKindChars)
	label(s.Properties["skill"], MaxSkillChars)
	tags := s.Properties["tags"]
	tags.MaxItems, tags.UniqueItems = new(MaxTags), true
	s.Properties["occurred_at"].MaxLength = new(MaxOccurredAtChars)
	return s
}

type tag string

// Schema states ingest's rules of a tag.
func (tag) Schema(huma.Registry) *huma.Schema {
	return label(&huma.Schema{Type: huma.TypeString, Description: "No control characters, no white space at either end."}, MaxTagChars)
}

// label states on s the rules of a label of at most max characters.
func label(s *huma.Schema, max int) *huma.Schema {
	s.MinLength, s.MaxLength, s.Pattern = new(1), new(max), labelPattern
	return s
}

// ingestInput is the raw body of POST /memory/ingest, and its Content-Type.
type ingestInput struct {
	RawBody     []byte `contentType:"application/json"`
	contentType string
}

// Resolve reads the request's Content-Type.
func (in *ingestInput) Resolve(ctx huma.Context) []error {
	in.contentType = ctx.Header("Content-Type")
	return nil
}

type ingestOutput struct {
	Location string `header:"Location" doc:"The job: /api/v1/jobs/{job_id}."`
	Replayed string `header:"Idempotent-Replayed" enum:"true" doc:"true when this batch was accepted before, within the idempotency window: the job is that earlier one."`
	Body     struct {
		JobID    string `json:"job_id" format:"uuid" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d"`
		IngestID string `json:"ingest_id" example:"b3e0fb18a86d443c6eab8b59d9ca5b3fef1d379f0d5e7244fb5c83727abbeafd" doc:"The batch's idempotency key, given or derived."`
		Status   string `json:"status" enum:"queued,running,succeeded,failed" doc:"The job's status now (on a replay it may be further along)."`
		Replayed bool   `json:"replayed" example:"false" doc:"true when this batch was accepted before: nothing new was enqueued."`
	}
}

// JobView is a job as the API shows it.
type JobView struct {
	JobID      string     `json:"job_id" format:"uuid" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d"`
	IngestID   string     `json:"ingest_id" example:"b3e0fb18a86d443c6eab8b59d9ca5b3fef1d379f0d5e7244fb5c83727abbeafd"`
	Project    string     `json:"project" example:"garden"`
	Status     string     `json:"status" enum:"queued,running,succeeded,failed" example:"succeeded"`
	ItemsTotal int        `json:"items_total" example:"1"`
	ItemsDone  int        `json:"items_done" example:"1"`
	Error      string     `json:"error,omitempty" example:"gave up after repeated failures: the database did not answer" doc:"Why it failed; only a failed job has it."`
	CreatedAt  time.Time  `json:"created_at" example:"2026-05-14T09:30:12.345Z"`
	FinishedAt *time.Time `json:"finished_at,omitempty" example:"2026-05-14T09:30:12.912Z"`
}

func jobView(j Job) JobView {
	v := JobView{JobID: j.ID, IngestID: j.IngestID, Project: j.Project, Status: string(j.Status), ItemsTotal: j.ItemsTotal,
		ItemsDone: j.ItemsDone, Error: j.Error, CreatedAt: j.CreatedAt}
	if !j.FinishedAt.IsZero() {
		v.FinishedAt = new(j.FinishedAt)
	}
	return v
}

const uuidPattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

type jobInput struct {
	ID string `path:"id" pattern:"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$" maxLength:"36" example:"019e25d2-7df9-7b41-9c3d-2f8e6a1b4c7d" doc:"The job's id."`
}

type jobOutput struct{ Body JobView }

type listJobsInput struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"At most this many jobs, newest first."`
	Cursor string `query:"cursor" maxLength:"256" pattern:"^[A-Za-z0-9_-]*$" example:"MTc3ODc1MTAxMjM0NS4wMTllMjVkMi03ZGY5LTdiNDEtOWMzZC0yZjhlNmExYjRjN2Q" doc:"The next_cursor of the previous page; absent for the first."`
}

type listJobsOutput struct {
	Body struct {
		Jobs       []JobView `json:"jobs" nullable:"false" maxItems:"100"`
		NextCursor string    `json:"next_cursor,omitempty" example:"MTc3ODc1MTAxMjM0NS4wMTllMjVkMi03ZGY5LTdiNDEtOWMzZC0yZjhlNmExYjRjN2Q" doc:"The cursor of the next page; absent on the last."`
	}
}

type queryInput struct {
	Q       string `query:"q" required:"true" minLength:"1" maxLength:"1024" example:"basil frost" doc:"The words to find, all of them, in any case: at most 1024 characters, of which at most 32 words (runs of letters and digits), and at least one. Nothing in it is syntax."`
	Project string `query:"project" maxLength:"128" example:"garden" doc:"Only this project's items."`
	Limit   int    `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"At most this many results."`
	Cursor  string `query:"cursor" maxLength:"512" pattern:"^[A-Za-z0-9_-]*$" example:"NDAwNjAwMDAwMDAwMDAwMC41YjBlN2MyYS05ZDE0LTRmNmItOGEzZS0xYzdkMmY5YjZlNDAuYzMzN2Q2NTU" doc:"The next_cursor of the previous page of the same query."`
}

type resultView struct {
	ID         string    `json:"id" format:"uuid" example:"5b0e7c2a-9d14-4f6b-8a3e-1c7d2f9b6e40"`
	Project    string    `json:"project" example:"garden"`
	Text       string    `json:"text" example:"Repot the basil before the frost"`
	Snippet    string    `json:"snippet" maxLength:"400" example:"Repot the **basil** before the **frost**" doc:"The passage around the first of the query's words in the item's first 2 KiB (from its start when they are further on), the query's words between ** marks, … where the text goes on: plain text, no markup, at most 400 bytes."`
	Kind       string    `json:"kind" example:"task"`
	Skill      string    `json:"skill,omitempty" example:"gardening"`
	Tags       []string  `json:"tags" nullable:"false" example:"herbs,autumn"`
	Score      float64   `json:"score" example:"2.75" doc:"Higher is better; comparable within one query only."`
	OccurredAt time.Time `json:"occurred_at" example:"2026-05-13T18:05:00Z"`
}

type queryOutput struct {
	Body struct {
		Results    []resultView `json:"results" nullable:"false" maxItems:"100"`
		NextCursor string       `json:"next_cursor,omitempty" example:"NDAwNjAwMDAwMDAwMDAwMC41YjBlN2MyYS05ZDE0LTRmNmItOGEzZS0xYzdkMmY5YjZlNDAuYzMzN2Q2NTU"`
	}
}

type itemInput struct {
	ID string `path:"id" pattern:"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$" maxLength:"36" example:"5b0e7c2a-9d14-4f6b-8a3e-1c7d2f9b6e40" doc:"The item's id, as a query returned it."`
}

type skillsOutput struct {
	Body struct {
		Skills []skillView `json:"skills" nullable:"false" maxItems:"1000"`
	}
}

type skillView struct {
	Name  string `json:"name" example:"gardening"`
	Count int    `json:"count" example:"12"`
}

type projectsOutput struct {
	Body struct {
		Projects []projectView `json:"projects" nullable:"false" maxItems:"1000"`
	}
}

type projectView struct {
	Name         string    `json:"name" example:"garden"`
	Items        int       `json:"items" example:"42"`
	LastIngestAt time.Time `json:"last_ingest_at" example:"2026-05-14T09:30:12.345Z"`
}

// Feature registers the memory operations, job log and job events, served
// by svc; a service without a store documents the API only.
func Feature(svc *Service) api.Feature {
	return func(s *api.Server) {
		api.Describe(s, description)
		api.DeclareErrorCode(s, codeKeyReused)
		api.DeclareQuota(s, QuotaItems)
		api.DeclareQuota(s, QuotaJobs)
		addRoutes(s, svc)
		streams.DeclareEvents(s, events...)
		addJobLog(s, svc)
		observeJobs(s, svc)
	}
}

// codeKeyReused is the envelope code of ErrKeyReused.
const codeKeyReused = "idempotency-key-reused"

const description = "Memory: each user ingests batches of notes, queries them, and follows the jobs that store them live."

func addRoutes(s *api.Server, svc *Service) {
	h := &memoryHandlers{svc: svc, replays: s.Metrics().Counter(prometheus.CounterOpts{
		Name: product.MetricNamespace + "_ingest_replays_total",
		Help: "Ingests answered from an earlier acceptance of the same batch (Idempotent-Replayed: true).",
	})}
	callers, tags := api.WithAccess(s.API, api.Caller), api.Tag(s.API, "Memory", "Your notes: ingest them in batches, follow the jobs that store them, query and delete them.")
	ttl, maxItems, maxJobs, r := svc.Config().TTL, svc.Config().MaxItems, svc.Config().MaxQueuedJobs, svc.Config().Rates
	huma.Register(callers, api.WithBudget(api.WithJSONBody(huma.Operation{
		OperationID: "ingest-memory", Method: http.MethodPost, Path: api.Prefix + "/memory/ingest", MaxBodyBytes: MaxBodyBytes,
		SkipValidateBody: true, // Parse checks the body, byte for byte as sent
		DefaultStatus:    http.StatusAccepted, Summary: "Ingest a batch of notes", Tags: tags, Errors: []int{http.StatusConflict, http.StatusUnprocessableEntity},
		Description: "Accepts a batch of 1 to 1000 items for processing by a job; 202 means the batch is durably stored and its job enqueued.\n\n" +
			"Idempotency: the batch's key is its ingest_id, or, when absent, the SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of the body exactly as sent. " +
			fmt.Sprintf("Keys are yours alone and last %v from the first request: within that time the same batch sent again answers the first job, with replayed true and Idempotent-Replayed: true, and enqueues nothing; ", ttl) +
			"the same ingest_id with other content is a 422 with code idempotency-key-reused. The key and the job are written in one transaction: concurrent identical requests make one job, and each gets its id. A replay draws from the budget like any request.\n\n" +
			"A 503 (or a connection lost before the answer) does not say that nothing was stored: the batch may have been committed and the answer lost. Send the same body again: if it was stored, the replay answers with its job.\n\n" +
			fmt.Sprintf("Quotas: you may hold %d items, stored or in batches whose jobs are not finished, and have %d jobs queued or running. ", maxItems, maxJobs) +
			"A batch that would pass either is a 409 (code conflict) whose details name the quota (items or queued_jobs), its limit and what you hold; nothing is stored or enqueued. " +
			"Deleting items frees room under the first, a job finishing under the second (a failed job also gives back the items it did not store). A replay takes nothing from either.",
	}, IngestRequest{}), r.budget("ingest", r.IngestPerHour)), h.ingest)
	huma.Register(callers, huma.Operation{
		OperationID: "list-jobs", Method: http.MethodGet, Path: api.Prefix + "/jobs", Summary: "List your jobs", Tags: tags,
		Description: "Your jobs, newest first, a page at a time.",
	}, h.listJobs)
	huma.Register(callers, huma.Operation{
		OperationID: "get-job", Method: http.MethodGet, Path: api.Prefix + "/jobs/{id}", Summary: "Get a job", Tags: tags,
		Description: "One of your jobs as it is now: its status, how many of its items it has stored, and, once it has ended, when and (if it failed) why. " +
			"Its log (GET /api/v1/jobs/{id}/log) follows it live. 404 when you have no job with that id.",
		Errors: []int{http.StatusNotFound},
	}, h.getJob)
	huma.Register(callers, api.WithBudget(huma.Operation{
		OperationID: "query-memory", Method: http.MethodGet, Path: api.Prefix + "/memory/query", Summary: "Find your items", Tags: tags,
		Description: "Your items that hold every word of q, best first, with a snippet, a page at a time. " +
			"Words are runs of letters and digits, in any case and however their accents are written (Unicode NFKC). " +
			fmt.Sprintf("Of the items that hold every word, the %d you stored most recently are ranked, each by its first %d KiB: ", RankedItems, HeadBytes>>10) +
			"the greater the share of its words that are words of q, the higher. To reach older items, narrow the query: another word, or a project. " +
			"A query's cost never grows with anyone else's items; for words most of your items hold, it does not grow with how many do.",
	}, r.budget("query", r.QueryPerHour)), h.query)
	huma.Register(callers, huma.Operation{
		OperationID: "delete-memory-item", Method: http.MethodDelete, Path: api.Prefix + "/memory/items/{id}", Summary: "Delete an item", Tags: tags,
		Description: "Deletes one of your items, by the id a query returned: no query finds it again, and it no longer counts against your items quota. " +
			"404 when you have no item with that id (deleted already, or never yours).",
		DefaultStatus: http.StatusNoContent, Errors: []int{http.StatusNotFound},
	}, h.deleteItem)
	huma.Register(callers, api.WithBudget(huma.Operation{
		OperationID: "list-skills", Method: http.MethodGet, Path: api.Prefix + "/memory/skills", Summary: "List your skills", Tags: tags,
		Description: "The skills your items name, and how many items name each (at most 1000, the most named first).",
	}, r.budget("skills", 0)), h.skills)
	huma.Register(callers, api.WithBudget(huma.Operation{
		OperationID: "list-projects", Method: http.MethodGet, Path: api.Prefix + "/memory/projects", Summary: "List your projects", Tags: tags,
		Description: "Your projects, how many items each has, and when it last received some (at most 1000).",
	}, r.budget("projects", r.ProjectsPerHour)), h.projects)
}

type memoryHandlers struct {
	svc     *Service
	replays prometheus.Counter
}

func (h *memoryHandlers) ingest(ctx context.Context, in *ingestInput) (*ingestOutput, error) {
	if mt, _, _ := mime.ParseMediaType(in.contentType); in.contentType != "" && mt != "application/json" {
		return nil, api.NewError(http.StatusUnsupportedMediaType, "send the batch as application/json")
	}
	a, err := h.svc.Ingest(ctx, auth.FromContext(ctx).User.ID, in.RawBody)
	if err != nil {
		return nil, ingestError(err)
	}
	out := &ingestOutput{Location: api.Prefix + "/jobs/" + a.JobID}
	out.Body.JobID, out.Body.IngestID, out.Body.Status, out.Body.Replayed = a.JobID, a.IngestID, string(a.Status), a.Replayed
	if a.Replayed {
		h.replays.Inc()
		out.Replayed = "true"
	}
	return out, nil
}

func (h *memoryHandlers) listJobs(ctx context.Context, in *listJobsInput) (*listJobsOutput, error) {
	jobs, next, err := h.svc.Jobs(ctx, auth.FromContext(ctx).User.ID, in.Cursor, in.Limit)
	if err != nil {
		return nil, ingestError(err)
	}
	out := &listJobsOutput{}
	out.Body.Jobs, out.Body.NextCursor = views(jobs, jobView), next
	return out, nil
}

func (h *memoryHandlers) getJob(ctx context.Context, in *jobInput) (*jobOutput, error) {
	j, err := h.svc.Job(ctx, auth.FromContext(ctx).User.ID, in.ID)
	if err != nil {
		return nil, ingestError(err)
	}
	return &jobOutput{Body: jobView(j)}, nil
}

func (h *memoryHandlers) query(ctx context.Context, in *queryInput) (*queryOutput, error) {
	res, err := h.svc.Query(ctx, auth.FromContext(ctx).User.ID, Query{Q: in.Q, Project: in.Project, Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, ingestError(err)
	}
	out := &queryOutput{}
	out.Body.Results, out.Body.NextCursor = views(res.Results, func(r Result) resultView { return resultView(r) }), res.Next
	return out, nil
}

func (h *memoryHandlers) deleteItem(ctx context.Context, in *itemInput) (*struct{}, error) {
	return nil, ingestError(h.svc.DeleteItem(ctx, auth.FromContext(ctx).User.ID, in.ID))
}

func (h *memoryHandlers) skills(ctx context.Context, _ *struct{}) (*skillsOutput, error) {
	skills, err := h.svc.Skills(ctx, auth.FromContext(ctx).User.ID)
	if err != nil {
		return nil, ingestError(err)
	}
	out := &skillsOutput{}
	out.Body.Skills = views(skills, func(s Skill) skillView { return skillView(s) })
	return out, nil
}

func (h *memoryHandlers) projects(ctx context.Context, _ *struct{}) (*projectsOutput, error) {
	projects, err := h.svc.Projects(ctx, auth.FromContext(ctx).User.ID)
	if err != nil {
		return nil, ingestError(err)
	}
	out := &projectsOutput{}
	out.Body.Projects = views(projects, func(p Project) projectView { return projectView(p) })
	return out, nil
}

// ingestError maps the service's errors to envelopes; nil stays nil.
func ingestError(err error) error {
	var ve *ValidationError
	var qe *QuotaError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		details := make([]api.FieldError, len(ve.Errors))
		for i, fe := range ve.Errors {
			details[i] = api.FieldError{Location: fe.Location, Message: fe.Message}
		}
		if ve.Malformed {
			return api.MalformedBody(details...)
		}
		return api.NewError(http.StatusUnprocessableEntity, "the request is not valid: see details.errors", details...)
	case errors.Is(err, ErrKeyReused):
		e := api.NewError(http.StatusUnprocessableEntity, "this ingest_id was used for a batch with other content; send this batch under a new ingest_id, or leave ingest_id out",
			api.FieldError{Location: "body.ingest_id", Message: "names another batch"})
		e.Code = codeKeyReused
		return e
	case errors.As(err, &qe):
		return quotaError(qe)
	}
	return api.ErrorFor(err, api.Messages{fault.ErrNotFound: "you have nothing with that id"})
}

// quotaError is the 409 of an ingest past a quota.
func quotaError(qe *QuotaError) *api.Error {
	var msg string
	if qe.Quota == QuotaJobs {
		msg = fmt.Sprintf("you have %d jobs queued or running, the most allowed: wait for some to finish (GET %s/jobs), then send the batch again", qe.Used, api.Prefix)
	} else {
		msg = fmt.Sprintf("this batch's %d items would take you past your quota of %d items (you hold %d, stored or in jobs not finished): delete items you no longer need (DELETE %s/memory/items/{id}), or send fewer", qe.Asked, qe.Limit, qe.Used, api.Prefix)
	}
	e := api.NewError(http.StatusConflict, msg)
	e.Details.Quota, e.Details.Limit, e.Details.Used = qe.Quota, qe.Limit, new(qe.Used)
	return e
}

// views is each of xs as the API shows it, never nil.
func views[T, V any](xs []T, view func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = view(x)
	}
	return out
}
