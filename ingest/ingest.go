package ingest

import (
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/store"
)

// Errors of the [Service]. A [*ValidationError] says what is wrong with a
// request; the others below are the answers a caller switches on.
var (
	// ErrKeyReused: the ingest_id names a live batch of other content.
	ErrKeyReused = errors.New("ingest: the ingest_id was used for a batch with different content; send this batch under a new ingest_id")
	// ErrNotFound: no job or item of the caller's has that id.
	ErrNotFound = fault.ErrNotFound
	// ErrPermanent marks an error of [Service.Process] that another
	// attempt cannot cure: the queue ends the job at once.
	ErrPermanent = fault.ErrPermanent
	// ErrYield marks an error of [Service.Process] that is no failure: the
	// job gives its worker back, and the queue resumes it later.
	ErrYield = store.ErrYield
	// ErrUnavailable wraps every store error that is not an answer (the
	// store is down or too slow): worth retrying shortly.
	ErrUnavailable = fault.ErrUnavailable
)

// unavailable marks err with ErrUnavailable unless it is an answer
// (ErrKeyReused, or one [fault.Outage] knows) or context.Canceled.
func unavailable(err error) error {
	if errors.Is(err, ErrKeyReused) {
		return err
	}
	return fault.Outage(err)
}

// The quotas of a user's ingestion ([QuotaError].Quota).
const (
	// QuotaItems caps the items a user holds: stored, or in batches whose
	// jobs are not final yet.
	QuotaItems = "items"
	// QuotaJobs caps a user's jobs that are not final: queued or running.
	QuotaJobs = "queued_jobs"
)

// A QuotaError refuses a batch that would take its user past a quota.
// Nothing of the batch was stored or enqueued.
type QuotaError struct {
	Quota string // QuotaItems or QuotaJobs
	Limit int    // the quota
	Used  int    // what the user holds of it now
	Asked int    // what the batch would take: its items, or one job
}

// Unwrap makes a QuotaError of the kind fault.ErrTooMany.
func (e *QuotaError) Unwrap() error { return fault.ErrTooMany }

// Error says which quota and what frees room under it.
func (e *QuotaError) Error() string {
	if e.Quota == QuotaJobs {
		return fmt.Sprintf("ingest: %d of your jobs are queued or running, the most allowed: wait for some to finish", e.Used)
	}
	return fmt.Sprintf("ingest: you hold %d items (stored, or in jobs not finished) of the %d allowed, and the batch has %d: delete items or send fewer", e.Used, e.Limit, e.Asked)
}

// Limits of a batch. A string's length is in characters (code points), as
// JSON Schema's maxLength counts it; the body's bound is in bytes.
const (
	MaxBodyBytes    = 8 << 20  // a whole request body
	MaxItems        = 1000     // items in one batch
	MaxTextChars    = 64 << 10 // one item's text
	MaxProjectChars = 128
	MaxKindChars    = 64
	MaxSkillChars   = 128
	MaxTags         = 32 // tags of one item
	MaxTagChars     = 64
	// MaxOccurredAtChars bounds an item's occurred_at, whose fraction of a
	// second RFC 3339 does not bound.
	MaxOccurredAtChars = 64
)

// The rules of a batch's strings beyond their length, as the regular
// expressions the spec states; a test holds each to its check
// (textProblem, labelProblem). white is what strings.TrimSpace trims,
// written as the characters themselves, which both dialects read alike.
const (
	white = "\\t\\n\\v\\f\\r \\x85\\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
	// textPattern is an item's text: not only white space, and no U+0000.
	textPattern = "^[" + white + "]*[^\\x00" + white + "][^\\x00]*$"
	// labelPattern is a project, kind, skill or tag: no control
	// character, no white space at either end.
	labelPattern = "^[^\\x00-\\x1f\\x7f-\\x9f" + white + "](?:[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x1f\\x7f-\\x9f" + white + "])?$"
)

// DefaultKind is the kind of an item that names none.
const DefaultKind = "note"

// An Item is one note of a batch, as a client sent it.
type Item struct {
	Text  string
	Kind  string   // DefaultKind when the client gave none
	Skill string   // "" for none
	Tags  []string // never nil
	// OccurredAt is when what the note records happened, to the
	// millisecond; zero when the client gave none.
	OccurredAt time.Time
}

// A Batch is the body of an ingest request, parsed and checked (see
// [Parse]).
type Batch struct {
	// IngestID is the ingest_id the client gave, "" when it gave none.
	IngestID string
	Project  string
	Items    []Item
}

// Status is where a job is in its life: queued, then running, then
// succeeded or failed. Succeeded and failed are final.
type Status string

// The statuses of a job.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// Final reports whether s is an end of a job's life.
func (s Status) Final() bool { return s == StatusSucceeded || s == StatusFailed }

// A Job is the processing of one accepted batch.
type Job struct {
	ID         string // a UUID the service assigns
	UserID     string
	IngestID   string
	Project    string
	Status     Status
	ItemsTotal int
	ItemsDone  int    // stored so far; ItemsTotal once succeeded
	Error      string // why it failed; "" unless Status is StatusFailed
	CreatedAt  time.Time
	StartedAt  time.Time // zero until a worker first took it
	FinishedAt time.Time // zero until Status is final
}

// Accepted is the answer to an ingest request.
type Accepted struct {
	JobID    string
	IngestID string
	Status   Status // the job's status now: on a replay it may be final
	// Replayed: the batch was accepted before under the same key, JobID
	// is that job's, and nothing was enqueued.
	Replayed bool
}

// A Result is one item found by [Service.Query].
type Result struct {
	ID         string
	Project    string
	Text       string
	Snippet    string // the best passage, matched words between SnippetOpen and SnippetClose
	Kind       string
	Skill      string
	Tags       []string
	Score      float64 // higher is better; comparable only within one query's results
	OccurredAt time.Time
}

// The marks around matched words in a [Result]'s Snippet: plain text,
// never markup a browser would act on.
const (
	SnippetOpen  = "**"
	SnippetClose = "**"
)

// Results is one page of a query's results, best first.
type Results struct {
	Results []Result
	// Next is the cursor of the next page, "" when this is the last.
	Next string
}

// A Skill is a skill some of the user's items name, and how many do.
type Skill struct {
	Name  string
	Count int
}

// A Project is a project the user has items in.
type Project struct {
	Name         string
	Items        int
	LastIngestAt time.Time // when the newest of its items was accepted
}
