package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// ingestAndProcess stores items (each a JSON object) in project for user.
func (e *env) ingestAndProcess(t *testing.T, user, project string, items ...string) {
	t.Helper()
	a := e.ingest(t, user, `{"project":"`+project+`","items":[`+strings.Join(items, ",")+`]}`)
	e.process(t, a.JobID)
}

func (e *env) query(t *testing.T, user string, q ingest.Query) ingest.Results {
	t.Helper()
	rs, err := e.svc.Query(context.Background(), user, q)
	if err != nil {
		t.Fatalf("Query(%+v): %v", q, err)
	}
	return rs
}

func texts(rs []ingest.Result) []string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Text)
	}
	return s
}

// shuffledItems is a store whose Items returns the items in reverse
// order, leaving out the one with the text gone.
type shuffledItems struct {
	ingest.Store
	gone string
}

func (s shuffledItems) Items(ctx context.Context, userID string, ids []string) ([]ingest.Result, error) {
	items, err := s.Store.Items(ctx, userID, ids)
	slices.Reverse(items)
	return slices.DeleteFunc(items, func(r ingest.Result) bool { return r.Text == s.gone }), err
}

// A page keeps its order, whatever the order the store reads its items
// in, and leaves out an item deleted since the search found it.
func TestQueryPageOrder(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, func(s ingest.Store) ingest.Store { return shuffledItems{s, "kiwi kiwi b"} })
		e.ingestAndProcess(t, "alice", "p", `{"text":"kiwi a b c"}`, `{"text":"kiwi kiwi b"}`,
			`{"text":"kiwi kiwi kiwi c"}`, `{"text":"kiwi a b c d e"}`)
		got := texts(e.query(t, "alice", ingest.Query{Q: "kiwi"}).Results)
		if want := []string{"kiwi kiwi kiwi c", "kiwi a b c", "kiwi a b c d e"}; !slices.Equal(got, want) {
			t.Fatalf("kiwi: %q, want %q", got, want)
		}
	})
}

func TestQuery(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		e.ingestAndProcess(t, "alice", "fruit",
			`{"text":"apple banana cherry date","kind":"fact","skill":"cooking","tags":["a","b"],"occurred_at":"2026-01-02T03:04:05Z"}`,
			`{"text":"apple apple apple banana"}`,
			`{"text":"banana split with apples"}`,
			`{"text":"Apple pie for the apple lover","skill":"cooking"}`)
		e.clock.Advance(time.Minute)
		e.ingestAndProcess(t, "alice", "garden", `{"text":"apple tree and carrot","skill":"growing"}`)
		e.ingestAndProcess(t, "bob", "fruit", `{"text":"apple apple apple apple","skill":"cooking"}`)

		t.Run("Ranking", func(t *testing.T) {
			rs := e.query(t, "alice", ingest.Query{Q: "apple"})
			got := texts(rs.Results)
			if len(got) != 4 || rs.Next != "" {
				t.Fatalf("apple: %q (next %q), want alice's 4 items with the word apple", got, rs.Next)
			}
			// Three apples in four words beat two in six, which beat one in four.
			if got[0] != "apple apple apple banana" || got[1] != "Apple pie for the apple lover" {
				t.Fatalf("apple ranks %q; want the most apples first", got)
			}
			for i := 1; i < len(rs.Results); i++ {
				if rs.Results[i].Score > rs.Results[i-1].Score {
					t.Fatalf("scores rise at %d: %v", i, rs.Results)
				}
			}
			if s := rs.Results[0].Snippet; !strings.Contains(s, ingest.SnippetOpen+"apple"+ingest.SnippetClose) {
				t.Errorf("snippet %q does not mark apple", s)
			}
			if s := rs.Results[1].Snippet; !strings.Contains(s, ingest.SnippetOpen+"Apple"+ingest.SnippetClose) {
				t.Errorf("snippet %q does not mark Apple, as written", s)
			}
		})

		t.Run("Fields", func(t *testing.T) {
			rs := e.query(t, "alice", ingest.Query{Q: "CHERRY"})
			if len(rs.Results) != 1 {
				t.Fatalf("cherry: %q", texts(rs.Results))
			}
			r := rs.Results[0]
			if r.Project != "fruit" || r.Kind != "fact" || r.Skill != "cooking" || !slices.Equal(r.Tags, []string{"a", "b"}) ||
				!r.OccurredAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || len(r.ID) != 36 || r.Score <= 0 {
				t.Fatalf("result = %+v", r)
			}
			rs = e.query(t, "alice", ingest.Query{Q: "split"})
			if r := rs.Results[0]; r.Kind != ingest.DefaultKind || r.Skill != "" || r.Tags == nil || len(r.Tags) != 0 || !r.OccurredAt.Equal(t0) {
				t.Fatalf("an item with no kind, skill, tags or time = %+v; want the defaults (the time it was accepted)", r)
			}
		})

		t.Run("AllWords", func(t *testing.T) {
			got := texts(e.query(t, "alice", ingest.Query{Q: "banana, apple!"}).Results)
			if len(got) != 2 || got[0] != "apple apple apple banana" {
				t.Fatalf("banana apple: %q, want the two items with both words", got)
			}
		})

		t.Run("NoSyntax", func(t *testing.T) {
			for _, q := range []string{`apple" OR "zzz`, `NEAR(apple zzz)`, `apple AND zzz`, `apple*zzz`, `apple:zzz`, `'apple' & !zzz`} {
				if rs := e.query(t, "alice", ingest.Query{Q: q}); len(rs.Results) != 0 {
					t.Errorf("%s: %q; want none (every word must match, zzz is in none)", q, texts(rs.Results))
				}
			}
			if rs := e.query(t, "alice", ingest.Query{Q: `"apple"`}); len(rs.Results) != 4 {
				t.Errorf(`"apple": %d results, want 4`, len(rs.Results))
			}
		})

		t.Run("Project", func(t *testing.T) {
			got := texts(e.query(t, "alice", ingest.Query{Q: "apple", Project: "garden"}).Results)
			if !slices.Equal(got, []string{"apple tree and carrot"}) {
				t.Fatalf("apple in garden: %q", got)
			}
			if got := e.query(t, "alice", ingest.Query{Q: "apple", Project: "nowhere"}).Results; len(got) != 0 {
				t.Fatalf("apple in nowhere: %q", texts(got))
			}
		})

		t.Run("Private", func(t *testing.T) {
			rs := e.query(t, "bob", ingest.Query{Q: "apple"})
			if got := texts(rs.Results); !slices.Equal(got, []string{"apple apple apple apple"}) {
				t.Fatalf("bob's apple: %q, want only his own", got)
			}
			if err := e.svc.DeleteItem(ctx, "alice", rs.Results[0].ID); !errors.Is(err, ingest.ErrNotFound) {
				t.Fatalf("alice deletes bob's item: err = %v, want ErrNotFound", err)
			}
			if got := e.query(t, "bob", ingest.Query{Q: "apple"}).Results; len(got) != 1 {
				t.Fatal("bob's item is gone after alice's delete")
			}
		})

		t.Run("Counts", func(t *testing.T) {
			skills, err := e.svc.Skills(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if want := []ingest.Skill{{Name: "cooking", Count: 2}, {Name: "growing", Count: 1}}; !slices.Equal(skills, want) {
				t.Fatalf("skills = %+v, want %+v", skills, want)
			}
			projects, err := e.svc.Projects(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			want := []ingest.Project{{Name: "garden", Items: 1, LastIngestAt: t0.Add(time.Minute)}, {Name: "fruit", Items: 4, LastIngestAt: t0}}
			if !slices.EqualFunc(projects, want, func(a, b ingest.Project) bool {
				return a.Name == b.Name && a.Items == b.Items && a.LastIngestAt.Equal(b.LastIngestAt)
			}) {
				t.Fatalf("projects = %+v, want %+v", projects, want)
			}
		})

		t.Run("Delete", func(t *testing.T) {
			rs := e.query(t, "alice", ingest.Query{Q: "cherry"})
			id := rs.Results[0].ID
			if err := e.svc.DeleteItem(ctx, "alice", id); err != nil {
				t.Fatal(err)
			}
			if got := e.query(t, "alice", ingest.Query{Q: "cherry"}).Results; len(got) != 0 {
				t.Fatalf("a deleted item is found: %q", texts(got))
			}
			if err := e.svc.DeleteItem(ctx, "alice", id); !errors.Is(err, ingest.ErrNotFound) {
				t.Fatalf("deleting it again: err = %v, want ErrNotFound", err)
			}
			if err := e.svc.DeleteItem(ctx, "alice", "x"); !errors.Is(err, ingest.ErrNotFound) {
				t.Fatalf("deleting a malformed id: err = %v, want ErrNotFound", err)
			}
			skills, _ := e.svc.Skills(ctx, "alice")
			if skills[0] != (ingest.Skill{Name: "cooking", Count: 1}) {
				t.Fatalf("skills after the delete = %+v, want cooking counted once", skills)
			}
		})
	})
}

// TestQueryPages: pages of a query hold every result once, in the order
// of one long page, ties (items of equal score) included.
func TestQueryPages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		const n = 45
		items := make([]string, n)
		for i := range items {
			// Five equal lengths, one to five "common": nine items share each score.
			k := i%5 + 1
			items[i] = fmt.Sprintf(`{"text":"%s%s"}`, strings.Repeat("common ", k), strings.Repeat("filler ", 6-k))
		}
		e.ingestAndProcess(t, "alice", "p", items...)
		e.ingestAndProcess(t, "alice", "p", `{"text":"nothing in common with the others but this"}`)

		all := e.query(t, "alice", ingest.Query{Q: "common", Limit: ingest.MaxLimit})
		if len(all.Results) != n+1 || all.Next != "" {
			t.Fatalf("one page: %d results, next %q; want %d", len(all.Results), all.Next, n+1)
		}
		scores := map[float64]int{}
		for _, r := range all.Results {
			scores[r.Score]++
		}
		if len(scores) < 5 || len(scores) > 6 {
			t.Fatalf("%d distinct scores, want 5 or 6: the test needs ties, and the ranking to tell the counts apart", len(scores))
		}
		for _, limit := range []int{1, 4, 9, 10} {
			var got []string
			cursor := ""
			for page := 0; page <= n+1; page++ {
				rs := e.query(t, "alice", ingest.Query{Q: "common", Limit: limit, Cursor: cursor})
				if len(rs.Results) > limit || len(rs.Results) == 0 {
					t.Fatalf("limit %d: page %d has %d results", limit, page, len(rs.Results))
				}
				for _, r := range rs.Results {
					got = append(got, r.ID)
				}
				if cursor = rs.Next; cursor == "" {
					break
				}
			}
			if len(got) != len(all.Results) {
				t.Fatalf("limit %d: pages hold %d results, want %d", limit, len(got), len(all.Results))
			}
			for i, r := range all.Results {
				if got[i] != r.ID {
					t.Fatalf("limit %d: result %d is %s, want %s", limit, i, got[i], r.ID)
				}
			}
		}

		if rs := e.query(t, "alice", ingest.Query{Q: "common"}); len(rs.Results) != ingest.DefaultLimit || rs.Next == "" {
			t.Fatalf("no limit: %d results, next %q; want %d and more", len(rs.Results), rs.Next, ingest.DefaultLimit)
		}
		next := e.query(t, "alice", ingest.Query{Q: "common", Limit: 2}).Next
		for name, c := range map[string]struct {
			q        ingest.Query
			location string
		}{
			"limit 101":             {ingest.Query{Q: "common", Limit: 101}, "query.limit"},
			"limit -1":              {ingest.Query{Q: "common", Limit: -1}, "query.limit"},
			"no words":              {ingest.Query{Q: " ?! "}, "query.q"},
			"too long":              {ingest.Query{Q: strings.Repeat("a", ingest.MaxQueryChars+1)}, "query.q"},
			"too many words":        {ingest.Query{Q: manyWords(ingest.MaxTerms + 1)}, "query.q"},
			"cursor of another q":   {ingest.Query{Q: "filler", Cursor: next}, "query.cursor"},
			"cursor of another p":   {ingest.Query{Q: "common", Project: "q", Cursor: next}, "query.cursor"},
			"a made-up cursor":      {ingest.Query{Q: "common", Cursor: "bm9wZQ"}, "query.cursor"},
			"a project with spaces": {ingest.Query{Q: "common", Project: " p"}, "query.project"},
		} {
			var ve *ingest.ValidationError
			if _, err := e.svc.Query(ctx, "alice", c.q); !errors.As(err, &ve) || ve.Errors[0].Location != c.location {
				t.Errorf("%s: err = %v, want a *ValidationError at %s", name, err, c.location)
			}
		}
	})
}

// manyWords returns n different words.
func manyWords(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprint("w", i)
	}
	return strings.Join(w, " ")
}

// A score is the item's own: another user's items, however many share the
// words, do not move it (it would tell one user of another's words); and
// words joined by punctuation are found on both databases alike.
func TestQueryScoresAreEachUsersOwn(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.ingestAndProcess(t, "alice", "p", `{"text":"retry with backoff in key.go"}`, `{"text":"mail a@b.com about v1.2.3"}`)
		before := e.query(t, "alice", ingest.Query{Q: "backoff"}).Results
		var many []string
		for range 50 {
			many = append(many, `{"text":"backoff backoff backoff"}`)
		}
		e.ingestAndProcess(t, "bob", "p", many...)
		after := e.query(t, "alice", ingest.Query{Q: "backoff"}).Results
		if len(before) != 1 || len(after) != 1 || before[0].Score != after[0].Score {
			t.Fatalf("alice's score before bob's items %v, after %v: want the same", before, after)
		}
		for _, q := range []string{"key.go", "a@b.com", "v1.2.3"} {
			if rs := e.query(t, "alice", ingest.Query{Q: q}).Results; len(rs) != 1 {
				t.Errorf("%q finds %d items, want 1", q, len(rs))
			}
		}
	})
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"ascii", "Retry with BACKOFF, then give up.", []string{"retry", "with", "backoff", "then", "give", "up"}},
		{"punctuation_separates", "key.go a@b.com v1.2.3 don't", []string{"key", "go", "a", "b", "com", "v1", "2", "3", "don", "t"}},
		{"accents_one_way", "Café CAFE\u0301 café", []string{"café", "café", "café"}},
		{"width_and_ligatures", "ＡＢＣ ﬁne", []string{"abc", "fine"}},
		{"marks_stay_in_words", "नमस्ते दुनिया", []string{"नमस्ते", "दुनिया"}},
		{"no_words", " ?! -- ", nil},
		{"invalid_utf8_separates", "ab\xffcd", []string{"ab", "cd"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ingest.Words(c.in); !slices.Equal(got, c.want) {
				t.Fatalf("Words(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// A word is found however its accents are spelt or its letters are cased,
// on both databases alike: e + a combining acute accent is é.
func TestQueryFindsWordsWrittenAnotherWay(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.ingestAndProcess(t, "alice", "p", `{"text":"un cafe\u0301 noir"}`, `{"text":"the ＡＢＣ of it"}`, `{"text":"Crème brûlée"}`)
		for q, want := range map[string]string{
			"café":               "un cafe\u0301 noir",
			"CAFE\u0301":         "un cafe\u0301 noir",
			"abc":                "the ＡＢＣ of it",
			"CRÈME BRU\u0302LÉE": "Crème brûlée",
		} {
			if got := texts(e.query(t, "alice", ingest.Query{Q: q}).Results); !slices.Equal(got, []string{want}) {
				t.Errorf("%q finds %q, want %q", q, got, want)
			}
		}
	})
}

// A query ranks the newest RankedItems of the items that hold its words:
// an older item, however well it would rank, is beyond them, and a
// narrower query (a project) reaches it.
func TestQueryRanksTheNewest(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.ingestAndProcess(t, "alice", "old", `{"text":"needle needle"}`)
		newer := make([]string, ingest.RankedItems)
		for i := range newer {
			newer[i] = fmt.Sprintf(`{"text":"needle in hay %d"}`, i)
		}
		e.ingestAndProcess(t, "alice", "new", newer...)
		var all []ingest.Result
		for cursor := ""; ; {
			rs := e.query(t, "alice", ingest.Query{Q: "needle", Limit: ingest.MaxLimit, Cursor: cursor})
			all = append(all, rs.Results...)
			if cursor = rs.Next; cursor == "" {
				break
			}
		}
		if len(all) != ingest.RankedItems || slices.Contains(texts(all), "needle needle") {
			t.Fatalf("%d results, the old item among them: %v; want the %d newest only", len(all), slices.Contains(texts(all), "needle needle"), ingest.RankedItems)
		}
		if got := texts(e.query(t, "alice", ingest.Query{Q: "needle", Project: "old"}).Results); !slices.Equal(got, []string{"needle needle"}) {
			t.Fatalf("needle in project old: %q", got)
		}
	})
}

// Snippets are bounded in bytes whatever the item, their marks closed,
// their text valid UTF-8; a long item is ranked and quoted from its head,
// and found by a word past it.
func TestQuerySnippets(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		hugeWord := "needle " + strings.Repeat("é", ingest.MaxTextChars/2-8) // then one word of 64 KiB
		longText := "start " + strings.Repeat("filler text ", 1000) + "needle at the end"
		punct := "needle" + strings.Repeat("!?", 100) + "after"
		e.ingestAndProcess(t, "alice", "p",
			fmt.Sprintf(`{"text":%q}`, hugeWord), fmt.Sprintf(`{"text":%q}`, longText), fmt.Sprintf(`{"text":%q}`, punct),
			`{"text":"a short needle note"}`, `{"text":"one two three four five six seven eight nine ten eleven twelve needle thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"}`)
		rs := e.query(t, "alice", ingest.Query{Q: "needle"})
		if len(rs.Results) != 5 {
			t.Fatalf("needle finds %d items, want 5 (the long one by a word past its head)", len(rs.Results))
		}
		want := map[string]string{
			"a short needle note": "a short **needle** note",
			longText:              "start filler text filler text filler text filler text filler text filler text filler text filler…",
			punct:                 "**needle** … after",
		}
		for _, r := range rs.Results {
			s := r.Snippet
			if len(s) > ingest.MaxSnippetBytes || !utf8.ValidString(s) || strings.Count(s, "**")%2 != 0 {
				t.Errorf("snippet of %.20q: %d bytes, %q", r.Text, len(s), s)
			}
			if w, ok := want[r.Text]; ok && s != w {
				t.Errorf("snippet of %.20q = %q, want %q", r.Text, s, w)
			}
			if strings.HasPrefix(r.Text, "one two") && s != "…nine ten eleven twelve **needle** thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty" {
				t.Errorf("snippet around a match = %q", s)
			}
		}
		if got := rs.Results[len(rs.Results)-1].Text; got != longText {
			t.Errorf("the item whose match is past its head ranks %.20q last, want the long one", got)
		}
		for _, r := range rs.Results {
			if r.Text == hugeWord && (!strings.HasPrefix(r.Snippet, "**needle** ééé") || !strings.HasSuffix(r.Snippet, "é…")) {
				t.Errorf("the snippet of a word longer than a snippet: %.40q…%q", r.Snippet, r.Snippet[max(0, len(r.Snippet)-8):])
			}
		}
	})
}
