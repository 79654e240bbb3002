package ingest

import (
	"context"
	"time"

	"github.com/brain-template/brain/internal/page"
)

// Store keeps idempotency keys, jobs and items. Every call ends in bounded
// time, and methods that name a user see only that user's rows (another
// user's is ErrNotFound).
type Store interface {
	// Accept records a's key and, unless the key is taken, creates its
	// job and enqueues it, all in one transaction:
	//
	//   - a new key, or one expired at a.CreatedAt: it takes a.ItemsTotal
	//     items and one job from the user's quotas, stores the key until
	//     a.ExpiresAt and job a.JobID (queued, with a.Batch), and enqueues
	//     it; replayed is false.
	//   - a live key with a.Fingerprint: that key's job, replayed true,
	//     and nothing changes.
	//   - a live key with another fingerprint: ErrKeyReused.
	//   - past a.MaxItems or a.MaxJobs: a [*QuotaError], nothing changes.
	//
	// Concurrent calls with one key behave as if they ran in turn.
	Accept(ctx context.Context, a Acceptance) (job Job, replayed bool, err error)
	// Replay looks the user's key ingestID up as Accept would at now,
	// without writing or waiting for a writer: the live entry's job and
	// replayed true when the entry has fingerprint, ErrKeyReused when it
	// has another, and replayed false when there is no live entry.
	Replay(ctx context.Context, userID, ingestID, fingerprint string, now time.Time) (job Job, replayed bool, err error)

	// Job returns the user's job id.
	Job(ctx context.Context, userID, id string) (Job, error)
	// Jobs returns up to limit of the user's jobs after the cursor,
	// newest first (see [Cursor]).
	Jobs(ctx context.Context, userID string, after Cursor, limit int) ([]Job, error)

	// StartJob moves job id from StatusQueued to StatusRunning, setting
	// StartedAt to now; a job in any other status is left as it is. It
	// returns the job as it then is, and its batch (nil once the job is
	// final). It is for the queue's worker: it sees every user's jobs.
	StartJob(ctx context.Context, id string, now time.Time) (Job, []byte, error)
	// StoreItems stores items of running job id, skipping those whose
	// (job, Seq) is stored already, and raises the job's ItemsDone to done,
	// in one transaction; ErrNotFound when job id is not running. When done
	// reaches ItemsTotal the same transaction makes the job succeeded, as
	// FinishJob does, and finished is true.
	StoreItems(ctx context.Context, id string, items []StoredItem, done int, now time.Time) (finished bool, err error)
	// FinishJob gives job id its final status, message as its Error and
	// FinishedAt now, drops its batch, and gives back to its user's quotas
	// the job and the items it did not store. A job final already is left
	// as it is; finished says whether this call made it final.
	FinishJob(ctx context.Context, id string, status Status, message string, now time.Time) (job Job, finished bool, err error)

	// Search returns up to s.Limit of the user's items that hold every
	// word of s.Words (in s.Project, when not ""), the most recently stored
	// first, each with its head (see [Head]); its cost grows with s.Limit
	// only.
	Search(ctx context.Context, userID string, s Search) ([]Hit, error)
	// Items returns the user's items ids, whole (Score and Snippet left
	// empty), in any order; an id that names none of them is left out.
	Items(ctx context.Context, userID string, ids []string) ([]Result, error)
	// DeleteItem deletes the user's item id, from the index too, and
	// gives it back to the user's quota of items.
	DeleteItem(ctx context.Context, userID, id string) error
	// Skills counts the user's items by skill (items with none are not
	// counted), most items first, then by name; at most limit skills.
	Skills(ctx context.Context, userID string, limit int) ([]Skill, error)
	// Projects counts the user's items by project, the project most
	// recently ingested into first, then by name; at most limit.
	Projects(ctx context.Context, userID string, limit int) ([]Project, error)

	// DeleteExpiredKeys deletes the idempotency entries that expired at
	// or before now, and returns how many. Their jobs and items stay.
	DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error)
	// UnfinishedJobs returns the ids of up to limit jobs, any user's, that
	// are not final and were created before before, the oldest first.
	UnfinishedJobs(ctx context.Context, before time.Time, limit int) ([]string, error)
}

// An Acceptance is what [Store.Accept] records for one ingest request.
type Acceptance struct {
	UserID      string
	IngestID    string
	Fingerprint string // see [Key]
	JobID       string // the id of the job to create, a new UUID
	Project     string
	ItemsTotal  int
	// Batch is the batch as the service encoded it, kept until the job is
	// final and given back to StartJob.
	Batch     string
	CreatedAt time.Time // now, to the millisecond
	ExpiresAt time.Time // when the key may name another batch
	// MaxItems and MaxJobs are the user's quotas (see [QuotaItems] and
	// [QuotaJobs]); 0 is no quota.
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

// A Cursor is the created time and id of the last job a page showed, in
// the list of a user's jobs, newest first; the zero Cursor is its start.
type Cursor = page.Cursor

// Search is what [Store.Search] looks for.
type Search struct {
	// Words are words as [Words] writes them; an item matches when its
	// text has them all.
	Words   []string
	Project string // "" for every project
	Limit   int
}

// A Hit is an item [Store.Search] found: its id and its head.
type Hit struct {
	ID   string
	Head string // Head(text)
}
