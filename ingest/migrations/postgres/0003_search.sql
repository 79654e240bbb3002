-- The full-text index keeps each user's words apart (ingest/sqlsearch.go):
-- search holds terms written by brain, each beginning with a key of the
-- item's user, so a query reads only its user's entries. It replaces the
-- tsvector PostgreSQL's parser made of the text, whose entries for a word
-- listed every user's items. The terms of the items stored before are
-- written by the Go step of this migration (reindexItems), in the same
-- transaction; n orders items as they were stored, newest last.
DROP INDEX items_search;
ALTER TABLE items DROP COLUMN search;
ALTER TABLE items ADD COLUMN n BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE items ADD COLUMN search tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE items ALTER COLUMN search DROP DEFAULT;
CREATE INDEX items_user_n ON items (user_id, n DESC);
-- The head (the first 2 KiB) of each item whose text is longer: a query
-- ranks by the head, and reading it here spares reading (and
-- decompressing) the start of the whole text.
CREATE TABLE item_heads (
    id   TEXT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    head TEXT NOT NULL
);
-- The GIN index of search, items_search, is made by the Go step once it
-- has written every row's terms: built once, not kept up row by row.
