package ingest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Query bounds.
const (
	MaxQueryChars = 1024 // a query's text, in characters (as the spec's maxLength counts)
	MaxTerms      = 32   // words in a query
)

// What a query reads, whatever the user has stored: the newest
// RankedItems of the items that hold its words, and of each its head,
// the first HeadBytes bytes of its text. So a query's cost has a bound
// of its own, however many items match and however long they are.
const (
	// RankedItems is how many of the items that hold every word of a
	// query are ranked: the ones most recently stored. A user whose
	// words are in more items reaches older ones with a narrower query
	// (another word, a project).
	RankedItems = 1000
	// HeadBytes is how much of an item's text ranks it and gives its
	// snippet: the first 2 KiB (a note's length, most often all of it).
	HeadBytes = 2 << 10
)

// Snippet bounds: about SnippetWords words, at most MaxSnippetBytes
// bytes, the marks included.
const (
	SnippetWords    = 16
	MaxSnippetBytes = 400
)

// A Query asks [Service.Query] for the user's items that contain words.
type Query struct {
	// Q is the words to find (see [Words]): "retry backoff" finds the
	// items whose text has both words. Nothing in it is syntax: quotes,
	// operators and punctuation separate words.
	Q       string
	Project string // "" for every project
	Limit   int    // 1 to MaxLimit; 0 is DefaultLimit
	Cursor  string // "" for the first page, else a Results.Next of the same query
}

// Query returns the user's items that contain every word of q.Q, best
// first, one page at a time.
//
// Of the items that hold every word, the newest RankedItems are ranked,
// each by its head (see [Head]): the more of the head's words are words
// of the query, the higher. A score depends on the item alone (and the
// query), never on the user's other items or anyone else's. Within the
// same data, pages follow each other without repeats or gaps (the cursor
// is a place in the order: score, then id); items stored between two
// pages can move the ranked window, and a page fetched after such a
// change may then repeat or skip a result near its edge.
//
// Each result's snippet is the passage of its head around the first word
// of the query, the query's words between SnippetOpen and SnippetClose,
// at most MaxSnippetBytes bytes.
//
// A query with no word, more than MaxTerms words or MaxQueryChars characters,
// a bad limit or a cursor of another query is a [*ValidationError].
func (s *Service) Query(ctx context.Context, userID string, q Query) (Results, error) {
	terms, limit, err := checkQuery(q)
	if err != nil {
		return Results{}, err
	}
	hash := queryHash(terms, q.Project)
	after, err := decodeSearchCursor(q.Cursor, hash)
	if err != nil {
		return Results{}, err
	}
	hits, err := s.store.Search(ctx, userID, Search{Words: terms, Project: q.Project, Limit: RankedItems})
	if err != nil {
		return Results{}, unavailable(err)
	}

	// Rank, and cut the page after the cursor.
	words := make(map[string]bool, len(terms))
	for _, t := range terms {
		words[t] = true
	}
	page := rank(hits, words, after)
	var out Results
	if len(page) > limit {
		page = page[:limit]
		last := page[limit-1]
		out.Next = encodeSearchCursor(Result{ID: last.id, Score: last.score}, hash)
	}
	if out.Results, err = s.pageItems(ctx, userID, page, words); err != nil {
		return Results{}, err
	}
	return out, nil
}

// checkQuery checks q and returns its words (see [queryTerms]) and the
// page's size; a problem is a [*ValidationError].
func checkQuery(q Query) (terms []string, limit int, err error) {
	var v ValidationError
	n := utf8.RuneCountInString(q.Q)
	if n <= MaxQueryChars {
		terms = queryTerms(q.Q)
	}
	switch {
	case n > MaxQueryChars:
		v.add("query.q", fmt.Sprintf("is %d characters; the most is %d", n, MaxQueryChars))
	case len(terms) == 0:
		v.add("query.q", "must have a word to find (letters or digits)")
	case len(terms) > MaxTerms:
		v.add("query.q", fmt.Sprintf("has %d words; the most is %d", len(terms), MaxTerms))
	}
	if q.Project != "" {
		v.label("query.project", q.Project, MaxProjectChars)
	}
	limit, err = pageLimit(q.Limit)
	if err != nil {
		v.add("query.limit", fmt.Sprintf("must be 1 to %d", MaxLimit))
	}
	if err := v.err(); err != nil {
		return nil, 0, err
	}
	return terms, limit, nil
}

// A ranked hit of a query: its item's id and score.
type ranked struct {
	id    string
	score float64
}

// rank scores hits by their heads against the query's words and returns
// those after the cursor after, best first (then by id).
func rank(hits []Hit, words map[string]bool, after searchCursor) []ranked {
	page := make([]ranked, 0, len(hits))
	for _, h := range hits {
		if sc := score(h.Head, words); !after.passed(sc, h.ID) {
			page = append(page, ranked{h.ID, sc})
		}
	}
	slices.SortFunc(page, func(a, b ranked) int { return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.id, b.id)) })
	return page
}

// pageItems reads the items of page, whole, in its order, each with its
// score and snippet; an item deleted since it was found is left out.
func (s *Service) pageItems(ctx context.Context, userID string, page []ranked, words map[string]bool) ([]Result, error) {
	ids := make([]string, len(page))
	for i, r := range page {
		ids[i] = r.id
	}
	items, err := s.store.Items(ctx, userID, ids)
	if err != nil {
		return nil, unavailable(err)
	}
	// Put items in page's order, in place: a page is at most MaxLimit.
	n := 0
	for _, r := range page {
		i := slices.IndexFunc(items[n:], func(it Result) bool { return it.ID == r.id })
		if i < 0 { // deleted since it was found
			continue
		}
		items[n], items[n+i] = items[n+i], items[n]
		items[n].Score, items[n].Snippet = r.score, snippet(items[n].Text, words)
		n++
	}
	return items[:n], nil
}

// queryTerms returns the words of q (see [Words]), each once, in the
// order they first appear.
func queryTerms(q string) []string {
	var terms []string
	for _, w := range Words(q) {
		if !slices.Contains(terms, w) {
			terms = append(terms, w)
		}
	}
	return terms
}

// Head is the start of text that ranks an item and gives its snippet:
// its first HeadBytes bytes, cut back to the start of a character, or
// all of it when it is shorter.
func Head(text string) string {
	if len(text) <= HeadBytes {
		return text
	}
	cut := HeadBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// score is the share of head's words that are words of the query: three
// of four words ranks above two of six.
func score(head string, query map[string]bool) float64 {
	n, matched := 0, 0
	eachWord(head, func(_, _ int, w string) bool {
		n++
		if query[w] {
			matched++
		}
		return true
	})
	if n == 0 {
		return 0
	}
	return float64(matched) / float64(n)
}

// snippet is the passage of text's head around the first of the query's
// words it holds (from the start when it holds none): about
// SnippetWords words as written, each of the query's words between
// SnippetOpen and SnippetClose, white space made one space and a long
// run of anything else " … ", "…" where the text goes on; at most
// MaxSnippetBytes bytes, every mark closed.
func snippet(text string, query map[string]bool) string {
	type span struct {
		start, end int
		match      bool
	}
	head := Head(text)
	words := make([]span, 0, 2*SnippetWords)
	first := -1
	eachWord(head, func(start, end int, w string) bool {
		if query[w] && first < 0 {
			first = len(words)
		}
		words = append(words, span{start, end, query[w]})
		return first < 0 || len(words) < first+SnippetWords // enough words around the first match
	})
	if len(words) == 0 {
		return ""
	}
	from := max(0, first-SnippetWords/4)
	to := min(len(words), from+SnippetWords)
	const ellipsis = "…"
	var b strings.Builder
	b.Grow(MaxSnippetBytes)
	// room is what is left for more of the passage, keeping room for a
	// last ellipsis.
	room := func() int { return MaxSnippetBytes - len(ellipsis) - b.Len() }
	if words[from].start > 0 {
		b.WriteString(ellipsis)
	}
	for i := from; i < to; i++ {
		w := words[i]
		if i > from {
			sep := separator(head[words[i-1].end:w.start])
			if len(sep) >= room() {
				return b.String() + ellipsis
			}
			b.WriteString(sep)
		}
		word, marks := head[w.start:w.end], 0
		if w.match {
			marks = len(SnippetOpen) + len(SnippetClose)
		}
		cut := len(word)+marks > room()
		if cut { // the word goes past the snippet's end: as much of it as fits
			word = cutUTF8(word, max(0, room()-marks))
		}
		if w.match && word != "" {
			word = SnippetOpen + word + SnippetClose
		}
		b.WriteString(word)
		if cut {
			return strings.TrimRight(b.String(), " ") + ellipsis
		}
	}
	if words[to-1].end < len(text) {
		b.WriteString(ellipsis)
	}
	return b.String()
}

// separator is what a snippet shows of the text between two words: a
// short run as it is, but each run of white space in it one space; a
// long one " … ", or " " when it is all white space.
func separator(s string) string {
	if s == " " {
		return s
	}
	if len(s) > 8 {
		if strings.TrimSpace(s) == "" {
			return " "
		}
		return " … "
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// cutUTF8 is the longest start of s of at most n bytes that ends at the
// end of a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
