package ingest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/brain-template/brain/store"
)

// The full-text index. Its terms are each user's own: every word of an
// item (Words) is kept as a term that begins with a key of the
// item's user, and so is the item's project. A query's words become the
// same terms, so the index lists, for each term, only the items of the
// user who asks: what a query costs never depends on another user's
// items, and no timing tells one user whether another's hold a word.
//
// Both databases keep the same terms, and neither parses them: letters
// and digits of ASCII only, joined by spaces.
//
//   - SQLite: items_terms, an FTS5 table that keeps no copy of the text
//     (content=''), only which items hold each term (detail=none), its
//     rowid the item's n.
//   - PostgreSQL: items.search, a tsvector of the terms
//     (array_to_tsvector: no parser, no positions), with a GIN index.
//
// On both, the head of each item longer than its head (Head) is in
// item_heads, so that a query reads 2 KiB of a long item, never its whole
// text. A query asks for every term of its words (and its project's), the
// newest items first (the highest n), at most RankedItems of them
// (see sqliteSearch and postgresSearch for what that costs).

// userKeyLen is the length of a user's key in the index: 16 characters
// of base32, 80 bits of the SHA-256 of the user's id, so that among a
// million users two share a key with a chance of about 4 in 10^13. Two
// users who did would share their terms' entries, which would cost them
// time, never results or privacy: Search keeps only the user's own rows,
// before it counts them against its limit.
const userKeyLen = 16

// indexBase32 writes terms: lower-case letters and digits only.
var indexBase32 = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// maxPlainWord is the longest word of ASCII letters and digits kept as
// it is in a term; any other word is kept as a hash.
const maxPlainWord = 32

// userKey is userID's key in the index. It is a variable for one test,
// which makes every user's key the same.
var userKey = func(userID string) string { return hash80(userID)[:userKeyLen] }

// hash80 is 80 bits of the SHA-256 of s, in the index's base32.
func hash80(s string) string {
	sum := sha256.Sum256([]byte(s))
	return indexBase32.EncodeToString(sum[:10])
}

// wordTerm is the term of word (as Words writes it) for the user
// whose key is key: key, "w" and the word itself when it is ASCII letters
// and digits, else key, "h" and a hash of the word.
func wordTerm(key, word string) string {
	if len(word) <= maxPlainWord && isPlain(word) {
		return key + "w" + word
	}
	return key + "h" + hash80(word)
}

// projectTerm is the term of a project for the user whose key is key.
func projectTerm(key, project string) string { return key + "p" + hash80(project) }

// isPlain reports whether w is lower-case ASCII letters and digits only.
func isPlain(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// itemTerms are the index terms of an item: its project's, and one for
// each of its words, each once, joined by spaces.
func itemTerms(userID, project, text string) string {
	key := userKey(userID)
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString(projectTerm(key, project))
	for _, w := range Words(text) {
		if t := wordTerm(key, w); !seen[t] {
			seen[t] = true
			b.WriteByte(' ')
			b.WriteString(t)
		}
	}
	return b.String()
}

// indexQueryTerms are the index terms s asks for, each once.
func indexQueryTerms(userID string, s Search) []string {
	key := userKey(userID)
	var terms []string
	if s.Project != "" {
		terms = append(terms, projectTerm(key, s.Project))
	}
	for _, w := range s.Words {
		terms = append(terms, wordTerm(key, w))
	}
	return terms
}

// Search returns up to s.Limit of the user's items that hold every word
// of s, the newest first, each with its head (see Store).
func (s *SQLStore) Search(ctx context.Context, userID string, q Search) ([]Hit, error) {
	if len(q.Words) == 0 {
		return []Hit{}, nil
	}
	// FTS5's syntax: the terms quoted, all of them required; tsquery's: the
	// terms joined by &. Terms have no quote to escape.
	terms := indexQueryTerms(userID, q)
	query, match := sqliteSearch, `"`+strings.Join(terms, `" "`)+`"`
	if s.db.Dialect == store.Postgres {
		query, match = postgresSearch, "'"+strings.Join(terms, "' & '")+"'"
	}
	rows, err := s.db.QueryContext(ctx, query, userID, match, q.Limit)
	return scanAll(rows, err, "search", func(h *Hit) error { return rows.Scan(&h.ID, &h.Head) })
}

// sqliteSearch is Search on SQLite: FTS5 reads the terms' entries from
// the newest down and stops at the limit; the user's id is checked before
// a row counts (see userKeyLen).
const sqliteSearch = `SELECT i.id, COALESCE(h.head, i.text)
	FROM items_terms t JOIN items i ON i.n = t.rowid LEFT JOIN item_heads h ON h.id = i.id
	WHERE items_terms MATCH $2 AND i.user_id = $1 ORDER BY t.rowid DESC LIMIT $3`

// postgresSearch is Search on PostgreSQL, in one statement that takes
// one of two ways. The planner judges each term alone: terms that many
// items hold apart and few together (or that only old items hold) would
// have it walk all of the user's items, checking each.
//
//   - walk: when the user's newest items match, as for words most items
//     hold, the newest limit of them are the answer, and all a query
//     costs. It starts only if the newest item matches and stops at the
//     first that does not.
//   - bitmap: else the GIN index's bitmap of the items that hold every
//     term: it costs what those items are, few for rare words, none for
//     words never together. The user's id is compared in a form no index
//     serves, and the tsquery is a value the planner cannot see, so that
//     it plans the bitmap, never a walk.
//
// A long match's head is read by id, one lookup each (a short one's is
// its text), so that no join can be planned as a walk of the user's items.
const postgresSearch = `WITH newest AS (
		SELECT search @@ $2::tsquery AS hit FROM items WHERE user_id = $1 ORDER BY n DESC LIMIT 1),
	recent AS (SELECT n, id, text, search @@ $2::tsquery AS hit FROM items
		WHERE user_id = $1 AND (SELECT hit FROM newest) ORDER BY n DESC LIMIT $3),
	walked AS (SELECT COALESCE((SELECT hit FROM newest), false)
		AND NOT EXISTS (SELECT FROM recent WHERE NOT hit) AS yes),
	m AS (SELECT n, id, text FROM recent WHERE (SELECT yes FROM walked)
		UNION ALL (SELECT n, id, text FROM items
			WHERE search @@ (SELECT $2::tsquery) AND user_id || '' = $1 AND NOT (SELECT yes FROM walked)
			ORDER BY n DESC LIMIT $3))
	SELECT id, COALESCE((SELECT head FROM item_heads h WHERE h.id = m.id), text) FROM m ORDER BY n DESC`

// Items returns the user's items ids, whole (see Store). On PostgreSQL
// each is read by its id, a lookup each: a plan that filters all of the
// user's items can look cheaper to the planner, and takes longer.
func (s *SQLStore) Items(ctx context.Context, userID string, ids []string) ([]Result, error) {
	if len(ids) == 0 {
		return []Result{}, nil
	}
	query, args := `SELECT i.* FROM unnest($2::text[]) AS w (id), LATERAL (
		SELECT id, project, text, kind, skill, tags, occurred_at FROM items WHERE id = w.id AND user_id = $1 OFFSET 0) i`,
		[]any{userID, ids}
	if s.db.Dialect == store.SQLite {
		args = make([]any, 1, len(ids)+1)
		args[0] = userID
		marks := make([]string, len(ids))
		for i, id := range ids {
			args = append(args, id)
			marks[i] = "$" + strconv.Itoa(i+2)
		}
		query = `SELECT id, project, text, kind, skill, tags, occurred_at FROM items
			WHERE user_id = $1 AND id IN (` + strings.Join(marks, ", ") + `)`
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	return scanAll(rows, err, "read items", func(r *Result) error {
		var tags string
		var occurred int64
		if err := rows.Scan(&r.ID, &r.Project, &r.Text, &r.Kind, &r.Skill, &tags, &occurred); err != nil {
			return err
		}
		r.OccurredAt = store.FromMillis(occurred)
		if r.Tags = []string{}; tags != "[]" {
			if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
				return fmt.Errorf("the tags of item %s: %w", r.ID, err)
			}
		}
		return nil
	})
}

// execer runs statements: a store transaction, or a migration's.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// index adds stored items to the index: on SQLite their terms (on
// PostgreSQL they are in the items' own rows), and on both the head of
// each longer than its head.
func index(ctx context.Context, tx execer, d store.Dialect, items []indexed) error {
	if len(items) == 0 {
		return nil
	}
	if d == store.SQLite {
		rows := make([]string, len(items))
		args := make([]any, 0, 2*len(items))
		for i, it := range items {
			rows[i] = "(?, ?)"
			args = append(args, it.n, itemTerms(it.userID, it.project, it.text))
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO items_terms (rowid, terms) VALUES "+strings.Join(rows, ", "), args...); err != nil {
			return fmt.Errorf("index items: %w", err)
		}
	}
	var heads []string
	var args []any
	for _, it := range items {
		if head := Head(it.text); len(head) < len(it.text) {
			heads = append(heads, fmt.Sprintf("($%d, $%d)", len(args)+1, len(args)+2))
			args = append(args, it.id, head)
		}
	}
	if len(heads) > 0 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO item_heads (id, head) VALUES "+strings.Join(heads, ", "), args...); err != nil {
			return fmt.Errorf("keep the heads of items: %w", err)
		}
	}
	return nil
}

// indexed is an item as the index sees it.
type indexed struct {
	n                         int64
	id, userID, project, text string
}

// reindexBatch is how many items reindexItems reads and writes at once.
const reindexBatch = 500

// reindexItems writes the index terms (and, on SQLite, the heads) of every
// item stored before the index kept each user's words apart: the Go step
// of migration 0003_search of the ingest set (see migrations.go). On
// PostgreSQL it then builds the GIN index of the terms, once.
func reindexItems(ctx context.Context, tx *sql.Tx, d store.Dialect) error {
	if err := writeTerms(ctx, tx, d); err != nil {
		return err
	}
	if d == store.SQLite {
		return nil
	}
	// fastupdate off: new items go into the index itself, not a pending
	// list that every query must also scan until a vacuum merges it.
	_, err := tx.ExecContext(ctx, "CREATE INDEX items_search ON items USING GIN (search) WITH (fastupdate = off)")
	return err
}

// writeTerms writes the terms of every item, reindexBatch at a time.
func writeTerms(ctx context.Context, tx *sql.Tx, d store.Dialect) error {
	for last := int64(0); ; {
		rows, err := tx.QueryContext(ctx, "SELECT n, id, user_id, project, text FROM items WHERE n > $1 ORDER BY n LIMIT $2", last, reindexBatch)
		batch, err := scanAll(rows, err, "reindex items", func(it *indexed) error {
			return rows.Scan(&it.n, &it.id, &it.userID, &it.project, &it.text)
		})
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		if err := index(ctx, tx, d, batch); err != nil {
			return fmt.Errorf("reindex items: %w", err)
		}
		if d == store.Postgres {
			values := make([]string, len(batch))
			args := make([]any, 0, 2*len(batch))
			for i, it := range batch {
				values[i] = fmt.Sprintf("($%d::bigint, $%d)", 2*i+1, 2*i+2)
				args = append(args, it.n, itemTerms(it.userID, it.project, it.text))
			}
			_, err = tx.ExecContext(ctx, `UPDATE items SET search = array_to_tsvector(string_to_array(v.terms, ' '))
				FROM (VALUES `+strings.Join(values, ", ")+`) AS v (n, terms) WHERE items.n = v.n`, args...)
		}
		if err != nil {
			return fmt.Errorf("reindex items: %w", err)
		}
		last = batch[len(batch)-1].n
	}
}
