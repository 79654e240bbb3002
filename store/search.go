package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/brain-template/brain/ingest"
)

// The full-text search is where the dialects differ most; each has its
// own query, of one shape. A CTE picks the page, best first: the user's
// matching items, ranked, after the cursor, cut to the limit. Only then
// are the page's rows read whole and their snippets made, so a word that
// matches thousands of items costs one sort of ids and scores, not
// thousands of snippets.
//
//   - SQLite: the items_fts index (FTS5), MATCH with each term quoted, so
//     nothing in a term is query syntax; the score is -bm25() (bm25 is
//     lower for better), which weighs a term by how rare it is in the
//     whole index; snippet() marks the matched words in the best passage.
//   - PostgreSQL: the GIN index of items.search, the 'simple'
//     configuration, plainto_tsquery of the terms (all must match, none
//     is syntax); the score is ts_rank(), which reads only the item
//     itself; ts_headline() makes the snippet.
//
// Both order by score, then id; a cursor is the (score, id) of the last
// result shown, and the next page holds the results after it.

// snippetWords is about how many words a snippet has.
const snippetWords = 16

// headlineBytes bounds the text PostgreSQL's ts_headline reads for a
// snippet (it parses all it is given): the start of a 64 KiB item.
const headlineBytes = 8 << 10

// Search returns a page of the user's items matching every term of q.
func (s *IngestStore) Search(ctx context.Context, userID string, q ingest.Search) ([]ingest.Result, error) {
	args := []any{nil, userID, q.Limit}
	var where string
	if q.Project != "" {
		args = append(args, q.Project)
		where += " AND i.project = $" + strconv.Itoa(len(args))
	}
	var query string
	if s.db.Dialect == Postgres {
		args[0] = strings.Join(q.Terms, " ")
		// Normalization 1: the rank divided by 1 + the log of the item's
		// length, so a long item does not win by its length alone.
		// ts_rank reads only the item itself.
		const score = "ts_rank(i.search, plainto_tsquery('simple', $1), 1)::float8"
		if q.After != (ingest.SearchCursor{}) {
			args = append(args, q.After.Score, q.After.ID)
			n := len(args)
			where += " AND (" + score + " < $" + strconv.Itoa(n-1) + " OR (" + score + " = $" + strconv.Itoa(n-1) + " AND i.id > $" + strconv.Itoa(n) + "))"
		}
		query = `WITH page AS (
			SELECT i.id, ` + score + ` AS score FROM items i
			WHERE i.search @@ plainto_tsquery('simple', $1) AND i.user_id = $2` + where + `
			ORDER BY score DESC, i.id LIMIT $3)
		SELECT i.id, i.project, i.text,
			ts_headline('simple', left(i.text, ` + strconv.Itoa(headlineBytes) + `), plainto_tsquery('simple', $1),
				'StartSel="` + ingest.SnippetOpen + `", StopSel="` + ingest.SnippetClose + `", MaxFragments=1, MaxWords=` + strconv.Itoa(snippetWords) + `, MinWords=` + strconv.Itoa(snippetWords/2) + `, FragmentDelimiter=" … "'),
			i.kind, i.skill, i.tags, page.score, i.occurred_at
		FROM page JOIN items i ON i.id = page.id ORDER BY page.score DESC, page.id`
	} else {
		quoted := make([]string, len(q.Terms))
		for i, t := range q.Terms {
			quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
		args[0] = strings.Join(quoted, " ")
		var after string
		if q.After != (ingest.SearchCursor{}) {
			args = append(args, q.After.Score, q.After.ID)
			n := len(args)
			after = " WHERE score < $" + strconv.Itoa(n-1) + " OR (score = $" + strconv.Itoa(n-1) + " AND id > $" + strconv.Itoa(n) + ")"
		}
		// The score is the item's own: its matched words over its words
		// (spaces + 1), never bm25, whose weights count every user's items
		// and would let one user learn of another's words.
		query = `WITH m AS (
			SELECT i.n, i.id, highlight(items_fts, 0, char(1), '') AS h, i.text AS t FROM items_fts JOIN items i ON i.n = items_fts.rowid
			WHERE items_fts MATCH $1 AND i.user_id = $2` + where + `),
		hits AS (SELECT n, id, CAST(length(h) - length(replace(h, char(1), '')) AS REAL) / (1 + length(t) - length(replace(t, ' ', ''))) AS score FROM m),
		page AS (SELECT n, id, score FROM hits` + after + ` ORDER BY score DESC, id LIMIT $3)
		SELECT i.id, i.project, i.text,
			snippet(items_fts, 0, '` + ingest.SnippetOpen + `', '` + ingest.SnippetClose + `', '…', ` + strconv.Itoa(snippetWords) + `),
			i.kind, i.skill, i.tags, page.score, i.occurred_at
		FROM page JOIN items i ON i.n = page.n JOIN items_fts ON items_fts.rowid = page.n
		WHERE items_fts MATCH $1 ORDER BY page.score DESC, page.id`
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap("search", err)
	}
	defer rows.Close()
	results := []ingest.Result{}
	for rows.Next() {
		var r ingest.Result
		var tags string
		var occurred int64
		if err := rows.Scan(&r.ID, &r.Project, &r.Text, &r.Snippet, &r.Kind, &r.Skill, &tags, &r.Score, &occurred); err != nil {
			return nil, wrap("search", err)
		}
		r.Tags = []string{}
		if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
			return nil, wrap("search: the tags of item "+r.ID, err)
		}
		r.OccurredAt = fromMS(occurred)
		results = append(results, r)
	}
	return results, wrap("search", rows.Err())
}
