package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// storeTexts stores one job of user's in project, one item per text, and
// returns the items' ids in the order stored.
func storeTexts(t *testing.T, s *ingest.SQLStore, user, jobID, project string, texts ...string) []string {
	t.Helper()
	ctx := context.Background()
	a := acceptance(user, "key-"+jobID, jobID)
	a.Project, a.ItemsTotal = project, len(texts)
	if _, _, err := s.Accept(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartJob(ctx, jobID, t0); err != nil {
		t.Fatal(err)
	}
	var items []ingest.StoredItem
	var ids []string
	for i, text := range texts {
		id := fmt.Sprintf("%s-%d", jobID, i)
		ids = append(ids, id)
		items = append(items, ingest.StoredItem{ID: id, UserID: user, JobID: jobID, Seq: i, Project: project,
			Item: ingest.Item{Text: text, Kind: "note"}, CreatedAt: t0})
	}
	if _, err := s.StoreItems(ctx, jobID, items, len(items), t0); err != nil {
		t.Fatal(err)
	}
	return ids
}

func hitIDs(hs []ingest.Hit) []string {
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestSearchKeepsUsersApart: the index entries a search reads are its
// user's alone, however many of another user's items hold the same words
// in a project of the same name; so what a search costs cannot depend on
// them. The newest items come first, and a long item's head is its first
// 2 KiB, cut at a character.
func TestSearchKeepsUsersApart(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		auth := store.NewAuthStore(db)
		mustUser(t, auth, "u1", "ada")
		mustUser(t, auth, "u2", "bob")
		s := ingest.NewSQLStore(db, nil)
		long := "apple " + strings.Repeat("é", ingest.HeadBytes) // 2-byte characters: the head's cut falls inside one
		ada := storeTexts(t, s, "u1", "j1", "p", "apple pie", "an apple a day", long)
		adaOther := storeTexts(t, s, "u1", "j2", "q", "apple tree")
		bob := make([]string, 30) // three times the limit below
		for i := range bob {
			bob[i] = "apple apple apple"
		}
		storeTexts(t, s, "u2", "j3", "p", bob...)

		search := ingest.Search{Words: []string{"apple"}, Project: "p", Limit: 10}
		hits, err := s.Search(ctx, "u1", search)
		if want := []string{ada[2], ada[1], ada[0]}; err != nil || !slices.Equal(hitIDs(hits), want) {
			t.Fatalf("Search = %v, %v; want ada's items of p, newest first: %v", hitIDs(hits), err, want)
		}
		if h := hits[0].Head; h != ingest.Head(long) || len(h) > ingest.HeadBytes || len(h) < ingest.HeadBytes-1 {
			t.Fatalf("the long item's head is %d bytes, want its first %d cut at a character", len(h), ingest.HeadBytes)
		}
		if hits[2].Head != "apple pie" {
			t.Fatalf("a short item's head = %q, want its text", hits[2].Head)
		}

		// The index itself, read without the user's id: the entries of
		// ada's terms are her items', and none of bob's.
		terms := ingest.IndexTerms("u1", search)
		var inIndex int
		if db.Dialect == store.SQLite {
			inIndex = count(t, db, `SELECT COUNT(*) FROM items_terms WHERE items_terms MATCH $1`, `"`+strings.Join(terms, `" "`)+`"`)
		} else {
			inIndex = count(t, db, `SELECT COUNT(*) FROM items WHERE search @@ $1::tsquery`, "'"+strings.Join(terms, "' & '")+"'")
		}
		if inIndex != 3 {
			t.Fatalf("ada's terms list %d items in the index, want her 3 (bob has 30 with the same word and project name)", inIndex)
		}

		if hits, _ := s.Search(ctx, "u1", ingest.Search{Words: []string{"apple"}, Limit: 2}); !slices.Equal(hitIDs(hits), []string{adaOther[0], ada[2]}) {
			t.Fatalf("Search with limit 2 = %v, want the two newest", hitIDs(hits))
		}
		if hits, _ := s.Search(ctx, "u1", ingest.Search{Words: []string{"apple", "day"}, Limit: 10}); !slices.Equal(hitIDs(hits), []string{ada[1]}) {
			t.Fatalf("Search of two words = %v, want the one item with both", hitIDs(hits))
		}
		if hits, _ := s.Search(ctx, "u2", ingest.Search{Words: []string{"pie"}, Limit: 10}); len(hits) != 0 {
			t.Fatalf("bob finds ada's pie: %v", hitIDs(hits))
		}
		if n := count(t, db, "SELECT COUNT(*) FROM item_heads"); n != 1 {
			t.Fatalf("%d heads kept, want the long item's", n)
		}
		if err := s.DeleteItem(ctx, "u1", ada[2]); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM item_heads"); n != 0 {
			t.Fatalf("%d heads kept after the long item was deleted, want none", n)
		}
		items, err := s.Items(ctx, "u1", []string{ada[0], bob[0], "nope"})
		if err != nil || len(items) != 1 || items[0].Text != "apple pie" || items[0].Project != "p" || items[0].Kind != "note" {
			t.Fatalf("Items = %+v, %v; want ada's one item of those ids", items, err)
		}
	})
}

// TestMigrationReindexes: items stored before the index kept each user's
// words apart are in the new index once the database is migrated.
func TestMigrationReindexes(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := openBefore(t, d, "search")
			for _, u := range []string{"u1", "u2"} {
				if _, err := db.ExecContext(ctx, `INSERT INTO users (id, username, password_hash, created_at) VALUES ($1, $1, 'x', 0)`, u); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(ctx, `INSERT INTO jobs (id, user_id, ingest_id, project, status, items_total, created_at) VALUES ($1, $2, 'k', 'p', 'succeeded', 2, 0)`, "j-"+u, u); err != nil {
					t.Fatal(err)
				}
			}
			long := strings.Repeat("word ", 1000) + "needle"
			for i, it := range []struct{ user, text string }{{"u1", "old apple"}, {"u2", "bob's apple"}, {"u1", long}} {
				if _, err := db.ExecContext(ctx, `INSERT INTO items (id, user_id, job_id, seq, project, text, kind, occurred_at, created_at)
					VALUES ($1, $2, $3, $4, 'p', $5, 'note', 0, 0)`, fmt.Sprint("i", i), it.user, "j-"+it.user, i, it.text); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := db.Migrate(ctx, ingest.Migrations); err != nil || n < 1 {
				t.Fatalf("Migrate = %d, %v; want the search migration applied", n, err)
			}
			if d == store.Postgres {
				if n := count(t, db, "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'items_search'"); n != 1 {
					t.Fatalf("the GIN index of the terms: %d, want it built", n)
				}
			}
			s := ingest.NewSQLStore(db, nil)
			if hits, err := s.Search(ctx, "u1", ingest.Search{Words: []string{"apple"}, Project: "p", Limit: 10}); err != nil || !slices.Equal(hitIDs(hits), []string{"i0"}) {
				t.Fatalf("after the migration ada's search = %v, %v; want her one apple", hitIDs(hits), err)
			}
			hits, err := s.Search(ctx, "u1", ingest.Search{Words: []string{"needle"}, Limit: 10})
			if err != nil || len(hits) != 1 || hits[0].Head != ingest.Head(long) {
				t.Fatalf("a long item after the migration: %+v, %v; want it found, with its head", hits, err)
			}
		})
	}
}

// Were two users' keys in the index the same, a search would still find
// only its user's items, and as many of them as it asks for: the other
// user's newer items, though they hold the word, are not counted against
// its limit.
func TestSearchWithCollidingUserKeys(t *testing.T) {
	ingest.OneUserKey(t)
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		auth := store.NewAuthStore(db)
		mustUser(t, auth, "u1", "ada")
		mustUser(t, auth, "u2", "bob")
		s := ingest.NewSQLStore(db, nil)
		ada := storeTexts(t, s, "u1", "j1", "p", "apple pie", "apple tart")
		storeTexts(t, s, "u2", "j2", "p", "apple", "apple", "apple", "apple", "apple")
		hits, err := s.Search(ctx, "u1", ingest.Search{Words: []string{"apple"}, Limit: 2})
		if err != nil || !slices.Equal(hitIDs(hits), []string{ada[1], ada[0]}) {
			t.Fatalf("ada's search with bob's key the same as hers = %v, %v; want her two items", hitIDs(hits), err)
		}
	})
}

// When the newest items hold fewer matches than the search asks for (the
// words are in older items only, or never together), the search still
// finds the newest of those there are: on PostgreSQL by the index's
// bitmap, at once or after the walk over the newest came up short.
func TestSearchFindsOlderMatches(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mustUser(t, store.NewAuthStore(db), "u1", "ada")
		s := ingest.NewSQLStore(db, nil)
		old := storeTexts(t, s, "u1", "j1", "p", "apple one", "apple two", "apple three", "pear")
		recent := storeTexts(t, s, "u1", "j2", "p", "odd", "even", "odd", "even", "plum", "plum")
		for _, c := range []struct {
			words []string
			limit int
			want  []string
		}{
			{[]string{"apple"}, 2, []string{old[2], old[1]}}, // the newest 2 items hold none
			{[]string{"apple"}, 10, []string{old[2], old[1], old[0]}},
			{[]string{"odd", "even"}, 2, nil}, // each in two items, never together
			{[]string{"pear"}, 1, []string{old[3]}},
			{[]string{"plum"}, 2, []string{recent[5], recent[4]}}, // the newest 2 items hold it
			{[]string{"plum"}, 3, []string{recent[5], recent[4]}}, // the third newest does not
		} {
			hits, err := s.Search(ctx, "u1", ingest.Search{Words: c.words, Limit: c.limit})
			if err != nil || !slices.Equal(hitIDs(hits), c.want) {
				t.Errorf("Search(%v, limit %d) = %v, %v; want %v", c.words, c.limit, hitIDs(hits), err, c.want)
			}
		}
	})
}
