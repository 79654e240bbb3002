package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Query bounds.
const (
	MaxQueryBytes = 1024 // a query's text
	MaxTerms      = 32   // words in a query
)

// A Query asks [Service.Query] for the user's items that contain words.
type Query struct {
	// Q is the words to find, in any case, separated by anything but
	// letters and digits: "retry backoff" finds the items whose text has
	// both words. Nothing in it is syntax: quotes, operators and
	// punctuation are separators.
	Q       string
	Project string // "" for every project
	Limit   int    // 1 to MaxLimit; 0 is DefaultLimit
	Cursor  string // "" for the first page, else a Results.Next of the same query
}

// Query returns the user's items that contain every word of q.Q, best
// first, one page at a time. An item ranks higher the more often the
// words occur in it relative to its length. Within the same data, pages
// follow each other without repeats or gaps (the cursor is a place in the
// order: score, then id).
//
// The ranking may use the whole index (on SQLite, how rare each word is
// across it), so items added or deleted between two pages can shift
// scores: a page fetched after such a change may then repeat or skip a
// result near its edge.
//
// A query with no word, more than MaxTerms words or MaxQueryBytes bytes,
// a bad limit or a cursor of another query is a [*ValidationError].
func (s *Service) Query(ctx context.Context, userID string, q Query) (Results, error) {
	var v ValidationError
	var terms []string
	if len(q.Q) <= MaxQueryBytes {
		terms = queryTerms(q.Q)
	}
	switch {
	case len(q.Q) > MaxQueryBytes:
		v.add("query.q", fmt.Sprintf("is %d bytes; the most is %d", len(q.Q), MaxQueryBytes))
	case len(terms) == 0:
		v.add("query.q", "must have a word to find (letters or digits)")
	case len(terms) > MaxTerms:
		v.add("query.q", fmt.Sprintf("has %d words; the most is %d", len(terms), MaxTerms))
	}
	if q.Project != "" {
		v.label("query.project", q.Project, MaxProjectBytes)
	}
	limit, err := pageLimit(q.Limit)
	if err != nil {
		v.add("query.limit", fmt.Sprintf("must be 1 to %d", MaxLimit))
	}
	if err := v.err(); err != nil {
		return Results{}, err
	}
	hash := queryHash(terms, q.Project)
	after, err := decodeSearchCursor(q.Cursor, hash)
	if err != nil {
		return Results{}, err
	}
	rs, err := s.store.Search(ctx, userID, Search{Terms: terms, Project: q.Project, After: after, Limit: limit + 1})
	if err != nil {
		return Results{}, unavailable(err)
	}
	out := Results{Results: rs}
	if len(rs) > limit {
		out.Results = rs[:limit]
		out.Next = encodeSearchCursor(rs[limit-1], hash)
	}
	return out, nil
}

// queryTerms splits q into its words, each once, in the order they
// first appear: runs of letters, digits and combining marks (what both
// databases' tokenizers keep together).
func queryTerms(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	})
	var terms []string
	for _, w := range words {
		if !slices.ContainsFunc(terms, func(t string) bool { return strings.EqualFold(t, w) }) {
			terms = append(terms, w)
		}
	}
	return terms
}
