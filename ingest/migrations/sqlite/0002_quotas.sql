-- Quotas: what each user holds of the per-user caps on ingestion, kept in
-- one row a user so that an ingest checks and takes its share with one
-- statement, in its own transaction (ingest/sqlstore.go, reserve).
--
-- items: the user's stored items, plus the items of their queued and
-- running jobs not stored yet (reserved when the batch was accepted, so
-- that a flood of queued batches cannot overshoot the cap).
-- jobs: the user's jobs that are not final (queued or running).
--
-- A user with no row holds nothing; the first ingest creates it. The
-- rows start from what the tables hold now.
CREATE TABLE user_usage (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    items   INTEGER NOT NULL DEFAULT 0,
    jobs    INTEGER NOT NULL DEFAULT 0
);

INSERT INTO user_usage (user_id, items, jobs)
SELECT u.id,
       (SELECT COUNT(*) FROM items i WHERE i.user_id = u.id)
         + (SELECT COALESCE(SUM(j.items_total - j.items_done), 0) FROM jobs j
            WHERE j.user_id = u.id AND j.status IN ('queued', 'running')),
       (SELECT COUNT(*) FROM jobs j WHERE j.user_id = u.id AND j.status IN ('queued', 'running'))
FROM users u
WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.user_id = u.id);

-- The jobs not final yet, oldest first: the hourly sweep fails those that
-- have been unfinished for far longer than any job takes (the queue lost
-- them), giving their share of the quotas back.
CREATE INDEX jobs_unfinished ON jobs (created_at) WHERE status IN ('queued', 'running');
