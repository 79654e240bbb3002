package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store/storetest"
)

// BenchmarkQuery finds a word that 20 items have among 1,000 and among
// 100,000, a page of 20 with snippets: how a query's cost grows with the
// items around the ones it finds. Seeding 100,000 items (through Ingest
// and Process, a batch of 1,000 at a time) takes a while, on PostgreSQL
// most; the seeding is not timed.
//
//	go test -run '^$' -bench BenchmarkQuery ./ingest/
//
// With -short (make bench-smoke), 100 and 1,000 items.
func BenchmarkQuery(b *testing.B) {
	sizes := []int{1_000, 100_000}
	if testing.Short() {
		sizes = []int{100, 1_000}
	}
	for _, d := range storetest.Dialects {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/items=%d", d, n), func(b *testing.B) {
				db := storetest.Open(b, d)
				e := newEnv(b, db)
				seed(b, e, n, 20)
				ctx := context.Background()
				// The statistics a running database has: autovacuum
				// gathers them on PostgreSQL within a minute or so of a
				// bulk load. Without them its planner scans all 100k of
				// the user's index entries beside the full-text index
				// (2 to 3.5 ms instead of 0.2; see BENCHMARKS.md).
				if _, err := db.ExecContext(ctx, "ANALYZE items"); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					rs, err := e.svc.Query(ctx, "alice", ingest.Query{Q: "needle", Limit: 20})
					if err != nil || len(rs.Results) != 20 {
						b.Fatalf("Query = %d results, %v", len(rs.Results), err)
					}
				}
			})
		}
	}
}

// seed stores n items of alice's, of twelve words each from a
// vocabulary of 2,000, the word needle in found of them.
func seed(b testing.TB, e *env, n, found int) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	type item struct {
		Text string `json:"text"`
	}
	const batch = ingest.MaxItems
	for start := 0; start < n; start += batch {
		items := make([]item, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			words := make([]string, 12)
			for w := range words {
				words[w] = fmt.Sprint("w", rng.IntN(2000))
			}
			if i%(n/found) == 0 {
				words[rng.IntN(len(words))] = "needle"
			}
			items = append(items, item{Text: strings.Join(words, " ")})
		}
		body, _ := json.Marshal(map[string]any{"project": "bench", "items": items})
		a, err := e.svc.Ingest(ctx, "alice", body)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.svc.Process(ctx, a.JobID); err != nil {
			b.Fatal(err)
		}
	}
}
