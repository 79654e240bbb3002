package ingest

import (
	"context"
	"time"

	"github.com/brain-template/brain/internal/page"
)

// Store keeps idempotency keys, jobs and items. Every call ends in bounded
// time; methods that name a user see only that user's rows.
type Store interface {
	// Accept, in one transaction, takes a's key, quotas and job and
	// enqueues it; a live key of the same fingerprint replays its job,
	// one of another is ErrKeyReused, a quota passed a [*QuotaError].
	Accept(ctx context.Context, a Acceptance) (job Job, replayed bool, err error)
	// Replay looks the key up as Accept would, without writing.
	Replay(ctx context.Context, userID, ingestID, fingerprint string, now time.Time) (job Job, replayed bool, err error)

	// Job returns the user's job id.
	Job(ctx context.Context, userID, id string) (Job, error)
	// Jobs returns up to limit of the user's jobs after the cursor, newest first.
	Jobs(ctx context.Context, userID string, after Cursor, limit int) ([]Job, error)

	// StartJob moves job id, any user's, from queued to running and
	// returns it with its batch (nil once final).
	StartJob(ctx context.Context, id string, now time.Time) (Job, []byte, error)
	// StoreItems stores items of running job id once each and raises its
	// ItemsDone to done, succeeding it at ItemsTotal, in one transaction.
	StoreItems(ctx context.Context, id string, items []StoredItem, done int, now time.Time) (finished bool, err error)
	// FinishJob makes job id final, unless it is, dropping its batch and
	// giving back to the quotas the job and the items it did not store.
	FinishJob(ctx context.Context, id string, status Status, message string, now time.Time) (job Job, finished bool, err error)

	// Search returns up to s.Limit of the user's items holding every word,
	// newest first, each with its [Head]; its cost grows with s.Limit only.
	Search(ctx context.Context, userID string, s Search) ([]Hit, error)
	// Items returns the user's items ids, in any order, without Score and Snippet.
	Items(ctx context.Context, userID string, ids []string) ([]Result, error)
	// DeleteItem deletes the user's item id and gives it back to the quota.
	DeleteItem(ctx context.Context, userID, id string) error
	// Skills counts the user's items by skill, most first, then by name.
	Skills(ctx context.Context, userID string, limit int) ([]Skill, error)
	// Projects counts the user's items by project, latest ingest first.
	Projects(ctx context.Context, userID string, limit int) ([]Project, error)

	// DeleteExpiredKeys deletes the keys expired at now and returns how many.
	DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error)
	// UnfinishedJobs returns up to limit ids of any user's jobs not final
	// and created before before, oldest first.
	UnfinishedJobs(ctx context.Context, before time.Time, limit int) ([]string, error)
}

// An Acceptance is what [Store.Accept] records for one ingest request.
type Acceptance struct {
	UserID      string
	IngestID    string
	Fingerprint string // see [Key]
	JobID       string // a new UUID
	Project     string
	ItemsTotal  int
	Batch       string    // encoded, kept until the job is final
	CreatedAt   time.Time // to the millisecond
	ExpiresAt   time.Time // when the key may name another batch
	// MaxItems and MaxJobs are the user's quotas; 0 is none.
	MaxItems, MaxJobs int
}

// A StoredItem is an item as the store keeps it.
type StoredItem struct {
	ID      string // a new UUID
	UserID  string
	JobID   string
	Seq     int // the item's place in its batch, from 0
	Project string
	Item
	CreatedAt time.Time // when its batch was accepted
}

// A Cursor is the place after a page of jobs; the zero Cursor is the start.
type Cursor = page.Cursor

// Search is what [Store.Search] looks for.
type Search struct {
	Words   []string // as [Words] writes them, all of which an item holds
	Project string   // "" for every project
	Limit   int
}

// A Hit is an item [Store.Search] found: its id and its head.
type Hit struct {
	ID   string
	Head string // Head(text)
}
