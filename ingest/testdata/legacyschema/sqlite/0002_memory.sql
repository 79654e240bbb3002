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
    created_at  INTEGER NOT NULL,
    started_at  INTEGER NOT NULL DEFAULT 0,
    finished_at INTEGER NOT NULL DEFAULT 0
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
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, ingest_id)
);
CREATE INDEX ingest_keys_expires_at ON ingest_keys (expires_at);

-- n is the rowid, which the full-text index refers to: an INTEGER
-- PRIMARY KEY, so that VACUUM keeps it.
CREATE TABLE items (
    n           INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    project     TEXT NOT NULL,
    text        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    skill       TEXT NOT NULL DEFAULT '',
    tags        TEXT NOT NULL DEFAULT '[]', -- a JSON array of strings
    occurred_at INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (job_id, seq)
);
CREATE INDEX items_user_project ON items (user_id, project, created_at);
CREATE INDEX items_user_skill ON items (user_id, skill);

-- The full-text index of items.text, kept by the triggers below (items
-- are inserted and deleted, never updated). unicode61 without removing
-- diacritics folds case only, as PostgreSQL's 'simple' configuration
-- does: a query finds the same items on both.
CREATE VIRTUAL TABLE items_fts USING fts5 (
    text,
    content = 'items',
    content_rowid = 'n',
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, text) VALUES (new.n, new.text);
END;
CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, text) VALUES ('delete', old.n, old.text);
END;
