-- The full-text index keeps each user's words apart (ingest/sqlsearch.go):
-- its terms are written by brain, each beginning with a key of the item's
-- user, so a query reads only its user's entries. It replaces items_fts,
-- whose entries for a word listed every user's items. The terms of the
-- items stored before are written by the Go step of this migration
-- (reindexItems), in the same transaction.
DROP TRIGGER items_fts_insert;
DROP TRIGGER items_fts_delete;
DROP TABLE items_fts;

-- Which items hold each term, and nothing else: no copy of the text
-- (content=''), no positions (detail=none). Its rowid is the item's n.
CREATE VIRTUAL TABLE items_terms USING fts5 (
    terms,
    content = '',
    contentless_delete = 1,
    detail = none,
    tokenize = 'ascii'
);

-- The head (the first 2 KiB) of each item whose text is longer: a query
-- ranks by the head, and reading it here spares reading the whole text.
CREATE TABLE item_heads (
    id   TEXT PRIMARY KEY,
    head TEXT NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER items_index_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_terms WHERE rowid = old.n;
    DELETE FROM item_heads WHERE id = old.id;
END;
