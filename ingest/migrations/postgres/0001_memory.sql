-- Ingestion: jobs with their batches, idempotency keys, and the items the
-- jobs store, with a full-text index of their text. Times are Unix
-- milliseconds.

CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ingest_id   TEXT NOT NULL,
    project     TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    items_total INTEGER NOT NULL,
    items_done  INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    batch       TEXT, -- the batch as the service encoded it; NULL once the job is final
    created_at  BIGINT NOT NULL,
    started_at  BIGINT NOT NULL DEFAULT 0,
    finished_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX jobs_user_created ON jobs (user_id, created_at DESC, id);

-- An ingest_id names one job of its user until expires_at. The job is
-- inserted after the key, in the same transaction: hence the deferred
-- reference.
CREATE TABLE ingest_keys (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ingest_id   TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, ingest_id)
);
CREATE INDEX ingest_keys_expires_at ON ingest_keys (expires_at);

-- search is the text as the full-text index sees it. The 'simple'
-- configuration lower-cases words and does nothing else: no stemming and
-- no stop words, which are right for one language only ('english' would
-- stem a French note as if it were English). Punctuation is made a space
-- first: PostgreSQL's parser would keep key.go, a@b.com or 3.14 as one
-- token, where SQLite's unicode61 tokenizer and the query's words split
-- them, so a query finds the same items on both.
CREATE TABLE items (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    project     TEXT NOT NULL,
    text        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    skill       TEXT NOT NULL DEFAULT '',
    tags        TEXT NOT NULL DEFAULT '[]', -- a JSON array of strings
    occurred_at BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    search      tsvector GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(text, '[[:punct:]]+', ' ', 'g'))) STORED,
    UNIQUE (job_id, seq)
);
CREATE INDEX items_user_project ON items (user_id, project, created_at);
CREATE INDEX items_user_skill ON items (user_id, skill);
-- fastupdate off: new items go into the index itself, not a pending list
-- that every query must also scan until a vacuum merges it (queries slowed
-- with the table's size; BENCHMARKS.md, Memory ingest).
CREATE INDEX items_search ON items USING GIN (search) WITH (fastupdate = off);
