package ingest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/store"
)

// SQLStore is the [Store] of a store.DB. A user's quota usage is one row
// of user_usage, changed in the transactions that change what it counts.
type SQLStore struct {
	db      *store.DB
	enqueue func(ctx context.Context, tx *store.Tx, jobID string, backlog int) error
	gate    chan struct{} // SQLite's writers in line (see inTx); nil on PostgreSQL
}

// NewSQLStore returns the ingest store of db. Accept calls enqueue (unless
// nil) in its transaction with the new job's id and its user's backlog.
func NewSQLStore(db *store.DB, enqueue func(ctx context.Context, tx *store.Tx, jobID string, backlog int) error) *SQLStore {
	s := &SQLStore{db: db, enqueue: enqueue}
	if db.Dialect == store.SQLite {
		s.gate = make(chan struct{}, 1)
	}
	return s
}

// inTx runs f in a transaction that writes, and commits it unless f
// fails; f's error is returned as it is, the others say what failed. On
// SQLite writers wait in line on s.gate rather than poll for the lock.
func (s *SQLStore) inTx(ctx context.Context, what string, f func(tx *store.Tx) error) error {
	if s.gate != nil {
		var cancel context.CancelFunc
		ctx, cancel = s.db.WithTimeout(ctx)
		defer cancel()
		select {
		case s.gate <- struct{}{}:
			defer func() { <-s.gate }()
		case <-ctx.Done():
			return store.Wrap(what, ctx.Err())
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return store.Wrap(what, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return store.Wrap(what+": commit", tx.Commit())
}

var _ Store = (*SQLStore)(nil)

// Accept records the key of a, or finds it (see Store). The key's upsert
// replaces an expired key and returns no row for a live one, read then
// as a replay; a concurrent Accept waits at the key's unique index.
func (s *SQLStore) Accept(ctx context.Context, a Acceptance) (job Job, replayed bool, err error) {
	err = s.inTx(ctx, "accept", func(tx *store.Tx) error {
		job, replayed, err = s.accept(ctx, tx, a)
		return err
	})
	if err != nil {
		return Job{}, false, err
	}
	return job, replayed, nil
}

func (s *SQLStore) accept(ctx context.Context, tx *store.Tx, a Acceptance) (Job, bool, error) {
	var jobID string
	err := tx.QueryRowContext(ctx, `INSERT INTO ingest_keys (user_id, ingest_id, fingerprint, job_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id, ingest_id) DO UPDATE SET fingerprint = excluded.fingerprint, job_id = excluded.job_id,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE ingest_keys.expires_at <= excluded.created_at
		RETURNING job_id`,
		a.UserID, a.IngestID, a.Fingerprint, a.JobID, store.Millis(a.CreatedAt), store.Millis(a.ExpiresAt)).Scan(&jobID)
	if errors.Is(err, sql.ErrNoRows) { // a live key
		job, replayed, err := s.replay(ctx, tx, a.UserID, a.IngestID, a.Fingerprint, a.CreatedAt)
		if !replayed && err == nil {
			err = store.Wrap("accept", errors.New("the key is live, but reads as absent"))
		}
		return job, replayed, err
	}
	if err != nil {
		return Job{}, false, store.Wrap("accept: take the key", err)
	}
	job := Job{ID: a.JobID, UserID: a.UserID, IngestID: a.IngestID, Project: a.Project, Status: StatusQueued,
		ItemsTotal: a.ItemsTotal, CreatedAt: a.CreatedAt}
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, batch, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		job.ID, job.UserID, job.IngestID, job.Project, string(job.Status), job.ItemsTotal, a.Batch, store.Millis(job.CreatedAt)); err != nil {
		return Job{}, false, store.Wrap("accept: create the job", err)
	}
	if s.enqueue != nil {
		// The backlog sets the priority; read without a lock.
		var backlog int
		err := tx.QueryRowContext(ctx, "SELECT jobs FROM user_usage WHERE user_id = $1", a.UserID).Scan(&backlog)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Job{}, false, store.Wrap("accept: read the backlog", err)
		}
		if err := s.enqueue(ctx, tx, job.ID, backlog); err != nil {
			return Job{}, false, store.Wrap("accept: enqueue the job", err)
		}
	}
	// Last, so the user's row is locked only until the commit.
	return job, false, reserve(ctx, tx, a)
}

// noQuota stands for a quota of 0 (none).
const noQuota = math.MaxInt32

// reserve takes a.ItemsTotal items and one job from the user's quotas in
// one statement, or returns a *QuotaError.
func reserve(ctx context.Context, tx *store.Tx, a Acceptance) error {
	maxItems, maxJobs := a.MaxItems, a.MaxJobs
	if maxItems <= 0 {
		maxItems = noQuota
	}
	if maxJobs <= 0 {
		maxJobs = noQuota
	}
	var jobs int
	err := tx.QueryRowContext(ctx, `INSERT INTO user_usage (user_id, items, jobs)
		SELECT CAST($1 AS TEXT), CAST($2 AS BIGINT), 1 WHERE CAST($2 AS BIGINT) <= CAST($3 AS BIGINT) AND CAST($4 AS INTEGER) >= 1
		ON CONFLICT (user_id) DO UPDATE SET items = user_usage.items + excluded.items, jobs = user_usage.jobs + 1
		WHERE user_usage.items + excluded.items <= CAST($3 AS BIGINT) AND user_usage.jobs < CAST($4 AS INTEGER)
		RETURNING jobs`, a.UserID, a.ItemsTotal, maxItems, maxJobs).Scan(&jobs)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Wrap("accept: take from the quotas", err)
	}
	var items int
	if err := tx.QueryRowContext(ctx, "SELECT items, jobs FROM user_usage WHERE user_id = $1", a.UserID).Scan(&items, &jobs); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return store.Wrap("accept: read the quotas", err)
	}
	if items+a.ItemsTotal > maxItems {
		return &QuotaError{Quota: QuotaItems, Limit: maxItems, Used: items, Asked: a.ItemsTotal}
	}
	return &QuotaError{Quota: QuotaJobs, Limit: maxJobs, Used: jobs, Asked: 1}
}

// release gives back to userID's quotas jobs jobs and items items.
func release(ctx context.Context, tx *store.Tx, userID string, jobs, items int) error {
	_, err := tx.ExecContext(ctx, `UPDATE user_usage SET
		items = CASE WHEN items > $2 THEN items - $2 ELSE 0 END,
		jobs = CASE WHEN jobs > $3 THEN jobs - $3 ELSE 0 END
		WHERE user_id = $1`, userID, items, jobs)
	return err
}

// Replay reads the user's live key, with its job, without a transaction.
func (s *SQLStore) Replay(ctx context.Context, userID, ingestID, fingerprint string, now time.Time) (Job, bool, error) {
	return s.replay(ctx, s.db, userID, ingestID, fingerprint, now)
}

func (s *SQLStore) replay(ctx context.Context, r interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *store.Row
}, userID, ingestID, fingerprint string, now time.Time) (Job, bool, error) {
	var live string
	job, err := scanJob(r.QueryRowContext(ctx, `SELECT `+jobCols+`, k.fingerprint FROM ingest_keys k JOIN jobs j ON j.id = k.job_id
		WHERE k.user_id = $1 AND k.ingest_id = $2 AND k.expires_at > $3`, userID, ingestID, store.Millis(now)), &live)
	switch {
	case errors.Is(err, ErrNotFound):
		return Job{}, false, nil
	case err != nil:
		return Job{}, false, store.Wrap("accept: read the key", err)
	case live != fingerprint:
		return Job{}, false, ErrKeyReused
	}
	return job, true, nil
}

const jobCols = "j.id, j.user_id, j.ingest_id, j.project, j.status, j.items_total, j.items_done, j.error, j.created_at, j.started_at, j.finished_at"

func scanJob(sc interface{ Scan(...any) error }, extra ...any) (Job, error) {
	var j Job
	var status string
	var created, started, finished int64
	err := sc.Scan(append([]any{&j.ID, &j.UserID, &j.IngestID, &j.Project, &status, &j.ItemsTotal, &j.ItemsDone, &j.Error, &created, &started, &finished}, extra...)...)
	j.Status = Status(status)
	j.CreatedAt, j.StartedAt, j.FinishedAt = store.FromMillis(created), store.FromMillis(started), store.FromMillis(finished)
	return j, store.NotFound(err)
}

// Job returns the user's job id, or ErrNotFound.
func (s *SQLStore) Job(ctx context.Context, userID, id string) (Job, error) {
	return scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs j WHERE j.id = $1 AND j.user_id = $2", id, userID))
}

// Jobs returns a page of the user's jobs, newest first.
func (s *SQLStore) Jobs(ctx context.Context, userID string, after Cursor, limit int) ([]Job, error) {
	cond, args := store.PageAfter("j", after, []any{userID, limit})
	rows, err := s.db.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs j WHERE j.user_id = $1"+cond+" ORDER BY j.created_at DESC, j.id LIMIT $2", args...)
	return scanAll(rows, err, "list jobs", func(j *Job) (err error) { *j, err = scanJob(rows); return err })
}

// scanAll reads and closes rows (unless err, the query's), each as scan reads it.
func scanAll[T any, R interface {
	Next() bool
	Err() error
	Close() error
}](rows R, err error, what string, scan func(*T) error) ([]T, error) {
	if err != nil {
		return nil, store.Wrap(what, err)
	}
	defer rows.Close()
	all := []T{}
	for rows.Next() {
		var v T
		if err := scan(&v); err != nil {
			return nil, store.Wrap(what, err)
		}
		all = append(all, v)
	}
	return all, store.Wrap(what, rows.Err())
}

// StartJob moves job id from queued to running and returns it with its
// batch; a job not queued is only read.
func (s *SQLStore) StartJob(ctx context.Context, id string, now time.Time) (Job, []byte, error) {
	var status string
	if err := s.db.QueryRowContext(ctx, "SELECT status FROM jobs WHERE id = $1", id).Scan(&status); err != nil {
		return Job{}, nil, store.Wrap("start job", store.NotFound(err))
	}
	if status == string(StatusQueued) {
		err := s.inTx(ctx, "start job", func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE jobs SET status = $1, started_at = $2 WHERE id = $3 AND status = $4",
				string(StatusRunning), store.Millis(now), id, string(StatusQueued))
			return store.Wrap("start job", err)
		})
		if err != nil {
			return Job{}, nil, err
		}
	}
	var batch sql.NullString
	j, err := scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+", j.batch FROM jobs j WHERE j.id = $1", id), &batch)
	if err != nil {
		return Job{}, nil, store.Wrap("start job", err)
	}
	if !batch.Valid {
		return j, nil, nil
	}
	return j, []byte(batch.String), nil
}

// itemCols are the columns StoreItems inserts; PostgreSQL adds search.
const itemCols = "id, user_id, job_id, seq, project, text, kind, skill, tags, occurred_at, created_at"

// StoreItems stores items of running job id (see Store). Updating the job
// first checks it is running and locks its row.
func (s *SQLStore) StoreItems(ctx context.Context, id string, items []StoredItem, done int, now time.Time) (finished bool, err error) {
	err = s.inTx(ctx, "store items", func(tx *store.Tx) error {
		var userID string
		var total, stored int
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET items_done = CASE WHEN items_done < $1 THEN $1 ELSE items_done END
			WHERE id = $2 AND status = $3 RETURNING user_id, items_total, items_done`,
			done, id, string(StatusRunning)).Scan(&userID, &total, &stored)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return store.Wrap("store items", err)
		}
		if len(items) > 0 {
			if err := s.insertItems(ctx, tx, items); err != nil {
				return err
			}
		}
		if finished = stored >= total; !finished {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "UPDATE jobs SET status = $1, error = '', finished_at = $2, batch = NULL WHERE id = $3",
			string(StatusSucceeded), store.Millis(now), id); err != nil {
			return store.Wrap("store items: finish the job", err)
		}
		return store.Wrap("store items: give back to the quotas", release(ctx, tx, userID, 1, 0))
	})
	return finished && err == nil, err
}

// insertItems inserts items, skipping those stored already, and indexes
// them; on PostgreSQL each row holds its terms (search).
func (s *SQLStore) insertItems(ctx context.Context, tx *store.Tx, items []StoredItem) error {
	pg, cols := s.db.Dialect == store.Postgres, itemCols
	if pg {
		cols += ", search"
	}
	bySeq := make(map[int]*StoredItem, len(items))
	values, args := make([]string, len(items)), make([]any, 0, 12*len(items))
	for i, it := range items {
		bySeq[it.Seq] = &items[i]
		if it.Tags == nil {
			it.Tags = []string{}
		}
		tags, _ := json.Marshal(it.Tags) // a []string always marshals
		row := []any{it.ID, it.UserID, it.JobID, it.Seq, it.Project, it.Text, it.Kind, it.Skill, string(tags),
			store.Millis(it.OccurredAt), store.Millis(it.CreatedAt)}
		if pg {
			row = append(row, itemTerms(it.UserID, it.Project, it.Text))
		}
		marks := make([]string, len(row))
		for c := range row {
			marks[c] = "$" + strconv.Itoa(len(args)+c+1)
		}
		if pg {
			marks[11] = "array_to_tsvector(string_to_array(" + marks[11] + ", ' '))"
		}
		values[i] = "(" + strings.Join(marks, ", ") + ")"
		args = append(args, row...)
	}
	rows, err := tx.QueryContext(ctx, "INSERT INTO items ("+cols+") VALUES "+strings.Join(values, ", ")+
		" ON CONFLICT (job_id, seq) DO NOTHING RETURNING n, seq", args...)
	stored, err := scanAll(rows, err, "store items", func(in *indexed) error {
		var seq int
		if err := rows.Scan(&in.n, &seq); err != nil {
			return err
		}
		it := bySeq[seq]
		in.id, in.userID, in.project, in.text = it.ID, it.UserID, it.Project, it.Text
		return nil
	})
	if err != nil {
		return err
	}
	return store.Wrap("store items", index(ctx, tx, s.db.Dialect, stored))
}

// FinishJob makes job id final, unless it is already (see Store).
func (s *SQLStore) FinishJob(ctx context.Context, id string, status Status, message string, now time.Time) (job Job, finished bool, err error) {
	err = s.inTx(ctx, "finish job", func(tx *store.Tx) error {
		var userID string
		var total, stored int
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET status = $1, error = $2, finished_at = $3, batch = NULL
			WHERE id = $4 AND status IN ($5, $6) RETURNING user_id, items_total, items_done`,
			string(status), message, store.Millis(now), id, string(StatusQueued), string(StatusRunning)).Scan(&userID, &total, &stored)
		if finished = err == nil; err != nil && !errors.Is(err, sql.ErrNoRows) {
			return store.Wrap("finish job", err)
		}
		if finished {
			if err := release(ctx, tx, userID, 1, max(total-stored, 0)); err != nil {
				return store.Wrap("finish job: give back to the quotas", err)
			}
		}
		job, err = scanJob(tx.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs j WHERE j.id = $1", id))
		return store.Wrap("finish job", err)
	})
	if err != nil {
		return Job{}, false, err
	}
	return job, finished, nil
}

// DeleteItem deletes the user's item id and gives it back to their quota.
func (s *SQLStore) DeleteItem(ctx context.Context, userID, id string) error {
	return s.inTx(ctx, "delete item", func(tx *store.Tx) error {
		if err := store.AffectedOne(tx.ExecContext(ctx, "DELETE FROM items WHERE id = $1 AND user_id = $2", id, userID)); err != nil {
			return store.Wrap("delete item", err)
		}
		return store.Wrap("delete item: give back to the quota", release(ctx, tx, userID, 0, 1))
	})
}

// Skills counts the user's items by skill, most first.
func (s *SQLStore) Skills(ctx context.Context, userID string, limit int) ([]Skill, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT skill, COUNT(*) FROM items WHERE user_id = $1 AND skill <> ''
		GROUP BY skill ORDER BY COUNT(*) DESC, skill LIMIT $2`, userID, limit)
	return scanAll(rows, err, "list skills", func(sk *Skill) error { return rows.Scan(&sk.Name, &sk.Count) })
}

// Projects counts the user's items by project, latest first.
func (s *SQLStore) Projects(ctx context.Context, userID string, limit int) ([]Project, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT project, COUNT(*), MAX(created_at) FROM items WHERE user_id = $1
		GROUP BY project ORDER BY MAX(created_at) DESC, project LIMIT $2`, userID, limit)
	return scanAll(rows, err, "list projects", func(p *Project) error {
		var last int64
		err := rows.Scan(&p.Name, &p.Items, &last)
		p.LastIngestAt = store.FromMillis(last)
		return err
	})
}

// sweepBatch bounds the keys one statement of DeleteExpiredKeys deletes.
const sweepBatch = 1000

// DeleteExpiredKeys deletes the keys expired at now, sweepBatch at a time.
func (s *SQLStore) DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM ingest_keys WHERE (user_id, ingest_id) IN (
			SELECT user_id, ingest_id FROM ingest_keys WHERE expires_at <= $1 LIMIT $2)`, store.Millis(now), sweepBatch)
		if err != nil {
			return total, store.Wrap("delete expired keys", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, store.Wrap("delete expired keys", err)
		}
		total += int(n)
		if n < sweepBatch {
			return total, nil
		}
	}
}

// UnfinishedJobs returns up to limit ids of old jobs not final. The
// statuses match the partial index's predicate.
func (s *SQLStore) UnfinishedJobs(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM jobs WHERE status IN ('queued', 'running') AND created_at < $1 ORDER BY created_at LIMIT $2`,
		store.Millis(before), limit)
	return scanAll(rows, err, "unfinished jobs", func(id *string) error { return rows.Scan(id) })
}

// JobCounts are every user's jobs by status: the load of the job queue.
type JobCounts struct {
	Queued, Running, Failed int64
}

// The counts of jobs; each condition is a partial index's own.
const (
	queuedJobsSQL = `SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running') AND status = 'queued'`
	jobCountsSQL  = `SELECT
		(` + queuedJobsSQL + `),
		(SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running') AND status = 'running'),
		(SELECT COUNT(*) FROM jobs WHERE status = 'failed')`
)

// JobCounts counts every user's jobs that are queued, running and failed.
func (s *SQLStore) JobCounts(ctx context.Context) (JobCounts, error) {
	var c JobCounts
	err := s.db.QueryRowContext(ctx, jobCountsSQL).Scan(&c.Queued, &c.Running, &c.Failed)
	return c, store.Wrap("count jobs", err)
}

// QueuedJobs counts every user's queued jobs.
func (s *SQLStore) QueuedJobs(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, queuedJobsSQL).Scan(&n)
	return n, store.Wrap("count queued jobs", err)
}
