package ingest

import (
	"errors"
	"fmt"
	"time"

	"github.com/brain-template/brain/internal/fault"
	"github.com/brain-template/brain/store"
)

// Errors of the [Service], besides a [*ValidationError] or a [*QuotaError].
var (
	// ErrKeyReused: the ingest_id names a live batch of other content.
	ErrKeyReused = errors.New("ingest: the ingest_id was used for a batch with different content; send this batch under a new ingest_id")
	ErrNotFound  = fault.ErrNotFound // no job or item of the caller's has that id
	// ErrPermanent marks an error of [Service.Process] that another attempt cannot cure.
	ErrPermanent = fault.ErrPermanent
	// ErrYield marks a [Service.Process] that gave its worker back, to resume later.
	ErrYield = store.ErrYield
	// ErrUnavailable wraps every store error that is not an answer: retry shortly.
	ErrUnavailable = fault.ErrUnavailable
)

// unavailable marks err with ErrUnavailable unless it is an answer.
func unavailable(err error) error {
	if errors.Is(err, ErrKeyReused) {
		return err
	}
	return fault.Outage(err)
}

// The quotas of a user's ingestion ([QuotaError].Quota).
const (
	QuotaItems = "items"       // items stored or in jobs not final
	QuotaJobs  = "queued_jobs" // jobs queued or running
)

// A QuotaError refuses a batch that would take its user past a quota;
// nothing of it was stored.
type QuotaError struct {
	Quota string // QuotaItems or QuotaJobs
	Limit int    // the quota
	Used  int    // what the user holds of it now
	Asked int    // what the batch would take: its items, or one job
}

// Unwrap makes a QuotaError a fault.ErrTooMany.
func (e *QuotaError) Unwrap() error { return fault.ErrTooMany }

// Error says which quota and what frees room under it.
func (e *QuotaError) Error() string {
	if e.Quota == QuotaJobs {
		return fmt.Sprintf("ingest: %d of your jobs are queued or running, the most allowed: wait for some to finish", e.Used)
	}
	return fmt.Sprintf("ingest: you hold %d items (stored, or in jobs not finished) of the %d allowed, and the batch has %d: delete items or send fewer", e.Used, e.Limit, e.Asked)
}

// Limits of a batch; a string's length is in code points.
const (
	MaxBodyBytes       = 8 << 20  // a whole request body
	MaxItems           = 1000     // items in one batch
	MaxTextChars       = 64 << 10 // one item's text
	MaxProjectChars    = 128
	MaxKindChars       = 64
	MaxSkillChars      = 128
	MaxTags            = 32 // tags of one item
	MaxTagChars        = 64
	MaxOccurredAtChars = 64 // RFC 3339 does not bound the fraction of a second
)

// The rules of a batch's strings as the spec states them; a test holds
// each to its check. white is what strings.TrimSpace trims.
const (
	white        = "\\t\\n\\v\\f\\r \\x85\\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
	textPattern  = "^[" + white + "]*[^\\x00" + white + "][^\\x00]*$"
	labelPattern = "^[^\\x00-\\x1f\\x7f-\\x9f" + white + "](?:[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x1f\\x7f-\\x9f" + white + "])?$"
)

// DefaultKind is the kind of an item that names none.
const DefaultKind = "note"

// An Item is one note of a batch, as a client sent it.
type Item struct {
	Text       string
	Kind       string    // DefaultKind when the client gave none
	Skill      string    // "" for none
	Tags       []string  // never nil
	OccurredAt time.Time // to the millisecond; zero when not given
}

// A Batch is the body of an ingest request, parsed and checked (see [Parse]).
type Batch struct {
	IngestID string // "" when not given
	Project  string
	Items    []Item
}

// Status is where a job is: queued, running, then succeeded or failed (final).
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
	Status   Status // now: on a replay it may be final
	Replayed bool   // accepted before under the same key: JobID is that job's
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

// The marks around matched words in a [Result]'s Snippet.
const (
	SnippetOpen  = "**"
	SnippetClose = "**"
)

// Results is one page of a query's results, best first.
type Results struct {
	Results []Result
	Next    string // the next page's cursor, "" on the last
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
