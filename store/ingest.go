package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/ingest"
)

// IngestStore keeps idempotency keys, jobs and items, and searches the
// items' text. It implements ingest.Store with the same SQL on both
// dialects, except for the full-text search (search.go).
type IngestStore struct {
	db      *DB
	enqueue func(ctx context.Context, tx *Tx, jobID string) error
	// gate holds this process's writers to SQLite in line, one at a
	// time (see begin); nil on PostgreSQL.
	gate chan struct{}
}

// NewIngestStore returns the ingest store of db. Accept calls enqueue in
// its transaction (Queue.EnqueueTx), with the transaction and the new
// job's id, so that the job is queued if and only if it is created; nil enqueues nothing (the
// jobs are then processed only when something calls Process).
func NewIngestStore(db *DB, enqueue func(ctx context.Context, tx *Tx, jobID string) error) *IngestStore {
	s := &IngestStore{db: db, enqueue: enqueue}
	if db.Dialect == SQLite {
		s.gate = make(chan struct{}, 1)
	}
	return s
}

// begin starts a transaction that writes; call done once it has ended.
//
// SQLite has one writer at a time, and a writer that finds the lock
// taken polls for it, sleeping longer and longer between tries: under a
// burst of writers (a client retrying a batch from many threads) the
// lock sits free while they sleep, and the unlucky ones wait out
// DB.Timeout. So on SQLite this process's writers of this store wait in
// line instead (a channel's waiting senders are served first come, first
// served), each holding the gate from BEGIN to COMMIT, and the lock is
// handed on at once. The wait counts against DB.Timeout, like the
// transaction. Writers of other stores or processes still poll.
func (s *IngestStore) begin(ctx context.Context) (tx *Tx, done func(), err error) {
	if s.gate == nil {
		tx, err := s.db.BeginTx(ctx, nil)
		return tx, func() {}, err
	}
	ctx, cancel := s.db.withTimeout(ctx)
	select {
	case s.gate <- struct{}{}:
	case <-ctx.Done():
		cancel()
		return nil, nil, ctx.Err()
	}
	if tx, err = s.db.BeginTx(ctx, nil); err != nil {
		<-s.gate
		cancel()
		return nil, nil, err
	}
	return tx, func() { <-s.gate; cancel() }, nil
}

var _ ingest.Store = (*IngestStore)(nil)

// ingestErr is err with this package's ErrNotFound made ingest's.
func ingestErr(err error) error {
	if errors.Is(err, ErrNotFound) {
		return ingest.ErrNotFound
	}
	return err
}

// Accept records the key of a, or finds it (see ingest.Store).
//
// One transaction takes the key, creates the job and enqueues it. The
// upsert that takes the key inserts a new key, replaces an expired one,
// and leaves a live one as it is, and then returns no row: the key is
// read then, as a replay's. (The service calls Replay first and answers
// a live key without Accept, so here that is a request that raced this
// one.) On PostgreSQL a concurrent Accept of the same key waits at
// the upsert (the key's unique index) until this transaction ends, then
// finds the key it committed; on SQLite, transactions that write run one
// at a time.
func (s *IngestStore) Accept(ctx context.Context, a ingest.Acceptance) (ingest.Job, bool, error) {
	tx, done, err := s.begin(ctx)
	if err != nil {
		return ingest.Job{}, false, wrap("accept", err)
	}
	defer done()
	defer tx.Rollback()
	var jobID string
	err = tx.QueryRowContext(ctx, `INSERT INTO ingest_keys (user_id, ingest_id, fingerprint, job_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id, ingest_id) DO UPDATE SET fingerprint = excluded.fingerprint, job_id = excluded.job_id,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE ingest_keys.expires_at <= excluded.created_at
		RETURNING job_id`,
		a.UserID, a.IngestID, a.Fingerprint, a.JobID, ms(a.CreatedAt), ms(a.ExpiresAt)).Scan(&jobID)
	if errors.Is(err, sql.ErrNoRows) { // a live key
		job, replayed, err := s.replay(ctx, tx, a.UserID, a.IngestID, a.Fingerprint, a.CreatedAt)
		if !replayed && err == nil {
			err = wrap("accept", errors.New("the key is live, but reads as absent"))
		}
		return job, replayed, err
	}
	if err != nil {
		return ingest.Job{}, false, wrap("accept: take the key", err)
	}
	job := ingest.Job{ID: a.JobID, UserID: a.UserID, IngestID: a.IngestID, Project: a.Project, Status: ingest.StatusQueued,
		ItemsTotal: a.ItemsTotal, CreatedAt: a.CreatedAt}
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, batch, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		job.ID, job.UserID, job.IngestID, job.Project, string(job.Status), job.ItemsTotal, a.Batch, ms(job.CreatedAt)); err != nil {
		return ingest.Job{}, false, wrap("accept: create the job", err)
	}
	if s.enqueue != nil {
		if err := s.enqueue(ctx, tx, job.ID); err != nil {
			return ingest.Job{}, false, wrap("accept: enqueue the job", err)
		}
	}
	return job, false, wrap("accept: commit", tx.Commit())
}

// Replay reads the user's live key, with its job (see ingest.Store),
// without a transaction or a lock.
func (s *IngestStore) Replay(ctx context.Context, userID, ingestID, fingerprint string, now time.Time) (ingest.Job, bool, error) {
	return s.replay(ctx, s.db, userID, ingestID, fingerprint, now)
}

// replay is Replay through r, the pool or a transaction.
func (s *IngestStore) replay(ctx context.Context, r interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *Row
}, userID, ingestID, fingerprint string, now time.Time) (ingest.Job, bool, error) {
	var live string
	job, err := scanJob(r.QueryRowContext(ctx, `SELECT `+jobCols+`, k.fingerprint FROM ingest_keys k JOIN jobs j ON j.id = k.job_id
		WHERE k.user_id = $1 AND k.ingest_id = $2 AND k.expires_at > $3`, userID, ingestID, ms(now)), &live)
	switch {
	case errors.Is(err, ingest.ErrNotFound):
		return ingest.Job{}, false, nil
	case err != nil:
		return ingest.Job{}, false, wrap("accept: read the key", err)
	case live != fingerprint:
		return ingest.Job{}, false, ingest.ErrKeyReused
	}
	return job, true, nil
}

const jobCols = "j.id, j.user_id, j.ingest_id, j.project, j.status, j.items_total, j.items_done, j.error, j.created_at, j.started_at, j.finished_at"

func scanJob(sc interface{ Scan(...any) error }, extra ...any) (ingest.Job, error) {
	var j ingest.Job
	var status string
	var created, started, finished int64
	err := sc.Scan(append([]any{&j.ID, &j.UserID, &j.IngestID, &j.Project, &status, &j.ItemsTotal, &j.ItemsDone, &j.Error, &created, &started, &finished}, extra...)...)
	j.Status = ingest.Status(status)
	j.CreatedAt, j.StartedAt, j.FinishedAt = fromMS(created), fromMS(started), fromMS(finished)
	return j, ingestErr(notFound(err))
}

// Job returns the user's job id, or ingest.ErrNotFound.
func (s *IngestStore) Job(ctx context.Context, userID, id string) (ingest.Job, error) {
	return scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs j WHERE j.id = $1 AND j.user_id = $2", id, userID))
}

// Jobs returns a page of the user's jobs, newest first.
func (s *IngestStore) Jobs(ctx context.Context, userID string, after ingest.Cursor, limit int) ([]ingest.Job, error) {
	q, args := "SELECT "+jobCols+" FROM jobs j WHERE j.user_id = $1", []any{userID, limit}
	if after != (ingest.Cursor{}) { // the jobs after it in the order below
		q += " AND (j.created_at < $3 OR (j.created_at = $3 AND j.id > $4))"
		args = append(args, ms(after.CreatedAt), after.ID)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY j.created_at DESC, j.id LIMIT $2", args...)
	if err != nil {
		return nil, wrap("list jobs", err)
	}
	defer rows.Close()
	jobs := []ingest.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, wrap("list jobs", err)
		}
		jobs = append(jobs, j)
	}
	return jobs, wrap("list jobs", rows.Err())
}

// StartJob moves job id from queued to running and returns it with its
// batch (see ingest.Store).
func (s *IngestStore) StartJob(ctx context.Context, id string, now time.Time) (ingest.Job, []byte, error) {
	if _, err := s.db.ExecContext(ctx, "UPDATE jobs SET status = $1, started_at = $2 WHERE id = $3 AND status = $4",
		string(ingest.StatusRunning), ms(now), id, string(ingest.StatusQueued)); err != nil {
		return ingest.Job{}, nil, wrap("start job", err)
	}
	var batch sql.NullString
	j, err := scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+", j.batch FROM jobs j WHERE j.id = $1", id), &batch)
	if err != nil {
		return ingest.Job{}, nil, wrap("start job", err)
	}
	if !batch.Valid {
		return j, nil, nil
	}
	return j, []byte(batch.String), nil
}

// itemCols are the columns StoreItems inserts, in its order.
const itemCols = "id, user_id, job_id, seq, project, text, kind, skill, tags, occurred_at, created_at"

// StoreItems stores items of running job id and moves its ItemsDone to
// done, in one transaction (see ingest.Store). It first updates the job,
// which checks that it is running and, on PostgreSQL, locks its row until
// the items are in: a FinishJob waits, so a job's ItemsDone always counts
// the items it stored. All the items go in one INSERT.
func (s *IngestStore) StoreItems(ctx context.Context, id string, items []ingest.StoredItem, done int) error {
	tx, end, err := s.begin(ctx)
	if err != nil {
		return wrap("store items", err)
	}
	defer end()
	defer tx.Rollback()
	if err := affectedOne(tx.ExecContext(ctx, "UPDATE jobs SET items_done = CASE WHEN items_done < $1 THEN $1 ELSE items_done END WHERE id = $2 AND status = $3",
		done, id, string(ingest.StatusRunning))); err != nil {
		return ingestErr(wrap("store items", err))
	}
	if len(items) > 0 {
		const n = 11 // len(itemCols)
		var q strings.Builder
		q.WriteString("INSERT INTO items (" + itemCols + ") VALUES ")
		args := make([]any, 0, n*len(items))
		for i, it := range items {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteByte('(')
			for c := range n {
				if c > 0 {
					q.WriteString(", ")
				}
				q.WriteString("$" + strconv.Itoa(i*n+c+1))
			}
			q.WriteByte(')')
			if it.Tags == nil {
				it.Tags = []string{}
			}
			tags, err := json.Marshal(it.Tags)
			if err != nil {
				return wrap("store items", err)
			}
			args = append(args, it.ID, it.UserID, it.JobID, it.Seq, it.Project, it.Text, it.Kind, it.Skill, string(tags), ms(it.OccurredAt), ms(it.CreatedAt))
		}
		q.WriteString(" ON CONFLICT (job_id, seq) DO NOTHING")
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return wrap("store items", err)
		}
	}
	return wrap("store items", tx.Commit())
}

// FinishJob makes job id final, unless it is already (see ingest.Store).
func (s *IngestStore) FinishJob(ctx context.Context, id string, status ingest.Status, message string, now time.Time) (ingest.Job, bool, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE jobs SET status = $1, error = $2, finished_at = $3, batch = NULL WHERE id = $4 AND status IN ($5, $6)",
		string(status), message, ms(now), id, string(ingest.StatusQueued), string(ingest.StatusRunning))
	if err != nil {
		return ingest.Job{}, false, wrap("finish job", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return ingest.Job{}, false, wrap("finish job", err)
	}
	j, err := scanJob(s.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs j WHERE j.id = $1", id))
	return j, n == 1, wrap("finish job", err)
}

// DeleteItem deletes the user's item id; on SQLite a trigger takes it out
// of the full-text index, on PostgreSQL the index is of the row itself.
func (s *IngestStore) DeleteItem(ctx context.Context, userID, id string) error {
	return ingestErr(affectedOne(s.db.ExecContext(ctx, "DELETE FROM items WHERE id = $1 AND user_id = $2", id, userID)))
}

// Skills counts the user's items by skill, most first.
func (s *IngestStore) Skills(ctx context.Context, userID string, limit int) ([]ingest.Skill, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT skill, COUNT(*) FROM items WHERE user_id = $1 AND skill <> ''
		GROUP BY skill ORDER BY COUNT(*) DESC, skill LIMIT $2`, userID, limit)
	if err != nil {
		return nil, wrap("list skills", err)
	}
	defer rows.Close()
	skills := []ingest.Skill{}
	for rows.Next() {
		var sk ingest.Skill
		if err := rows.Scan(&sk.Name, &sk.Count); err != nil {
			return nil, wrap("list skills", err)
		}
		skills = append(skills, sk)
	}
	return skills, wrap("list skills", rows.Err())
}

// Projects counts the user's items by project, the most recently
// ingested into first.
func (s *IngestStore) Projects(ctx context.Context, userID string, limit int) ([]ingest.Project, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT project, COUNT(*), MAX(created_at) FROM items WHERE user_id = $1
		GROUP BY project ORDER BY MAX(created_at) DESC, project LIMIT $2`, userID, limit)
	if err != nil {
		return nil, wrap("list projects", err)
	}
	defer rows.Close()
	projects := []ingest.Project{}
	for rows.Next() {
		var p ingest.Project
		var last int64
		if err := rows.Scan(&p.Name, &p.Items, &last); err != nil {
			return nil, wrap("list projects", err)
		}
		p.LastIngestAt = fromMS(last)
		projects = append(projects, p)
	}
	return projects, wrap("list projects", rows.Err())
}

// sweepBatch bounds the keys one statement of DeleteExpiredKeys deletes,
// so that a sweep after a long pause is many short statements, none
// holding locks for long.
const sweepBatch = 1000

// DeleteExpiredKeys deletes the keys expired at now, sweepBatch at a time.
func (s *IngestStore) DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM ingest_keys WHERE (user_id, ingest_id) IN (
			SELECT user_id, ingest_id FROM ingest_keys WHERE expires_at <= $1 LIMIT $2)`, ms(now), sweepBatch)
		if err != nil {
			return total, wrap("delete expired keys", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, wrap("delete expired keys", err)
		}
		total += int(n)
		if n < sweepBatch {
			return total, nil
		}
	}
}
