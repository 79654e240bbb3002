-- The full-text index keeps each user's words apart (store/search.go):
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
-- fastupdate off: new items go into the index itself, not a pending list
-- that every query must also scan until a vacuum merges it.
CREATE INDEX items_search ON items USING GIN (search) WITH (fastupdate = off);
