package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// BenchmarkQueryCost is what one query costs a user with many items, by
// what it looks for: a word in every one of 100,000 items (common), in
// 20 of them (needle), in about 600 (w17), in the oldest 1,000 only
// (vintage), and two words each in half of them but never together
// (odd even); and a word in every one of 2,000 items of 64 KiB (long). Another user (bob) holds as many items,
// with the same words: a query's cost must not grow with them. Beside
// ns/op it reports the median and the 99th percentile (the slowest of
// fewer than 100 runs) in milliseconds:
//
//	go test -run '^$' -bench BenchmarkQueryCost -benchtime 100x ./ingest/
//
// With -short (make bench-smoke), the data sets are 2,000 and 20 items:
// the same code, seeded in seconds.
func BenchmarkQueryCost(b *testing.B) {
	nWords, nLong := 100_000, 2000
	if testing.Short() {
		nWords, nLong = 2000, 20
	}
	for _, d := range storetest.Dialects {
		// Each data set is seeded once, on the first benchmark that needs
		// it (a -bench pattern that matches none seeds none).
		words := lazyEnv(b, d, func(e *env, user string) { seedWords(b, e, user, nWords) })
		long := lazyEnv(b, d, func(e *env, user string) { seedLong(b, e, user, nLong) })
		for _, q := range []string{"common", "needle", "w17", "vintage", "odd even"} {
			b.Run(fmt.Sprintf("%s/items=%d/q=%s", d, nWords, strings.ReplaceAll(q, " ", "+")), func(b *testing.B) { timeQuery(b, words(), q) })
		}
		b.Run(fmt.Sprintf("%s/items=%dx64KiB/q=common", d, nLong), func(b *testing.B) { timeQuery(b, long(), "common") })
	}
}

// lazyEnv returns a function that returns an env on a database of
// dialect d in which seed has stored alice's and bob's items, seeding
// it on the first call.
func lazyEnv(b *testing.B, d store.Dialect, seed func(e *env, user string)) func() *env {
	var e *env
	return func() *env {
		if e == nil {
			db := storetest.Open(b, d)
			e = newEnv(b, db)
			for _, user := range []string{"alice", "bob"} {
				seed(e, user)
			}
			if _, err := db.ExecContext(context.Background(), "ANALYZE"); err != nil {
				b.Fatal(err)
			}
		}
		return e
	}
}

// timeQuery runs alice's query q, a page of 20, b.N times.
func timeQuery(b *testing.B, e *env, q string) {
	ctx := context.Background()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		rs, err := e.svc.Query(ctx, "alice", ingest.Query{Q: q, Limit: 20})
		if err != nil || len(rs.Results) == 0 && q != "odd even" {
			b.Fatalf("Query(%s) = %d results, %v", q, len(rs.Results), err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[min(len(took)-1, len(took)*99/100)]), "p99-ms")
}

// seedWords stores n items of user's, each the word common, odd or even
// by turns, and ten words from a vocabulary of 2,000; the word needle in
// 20 of them, and vintage in the first 1% stored.
func seedWords(b testing.TB, e *env, user string, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	seedBatches(b, e, user, n, ingest.MaxItems, func(i int) string {
		words := []string{"common", [2]string{"odd", "even"}[i%2]}
		for range 10 {
			words = append(words, fmt.Sprint("w", rng.IntN(2000)))
		}
		if i%(n/20) == 0 {
			words[2] = "needle"
		}
		if i < n/100 {
			words[3] = "vintage"
		}
		return strings.Join(words, " ")
	})
}

// seedLong stores n items of user's, each of 64 KiB: the word common
// and words from a vocabulary of 2,000.
func seedLong(b testing.TB, e *env, user string, n int) {
	rng := rand.New(rand.NewPCG(3, 4))
	seedBatches(b, e, user, n, 100, func(int) string {
		var t strings.Builder
		t.WriteString("common")
		for t.Len() < ingest.MaxTextChars-8 {
			fmt.Fprint(&t, " w", rng.IntN(2000))
		}
		return t.String()
	})
}

// seedBatches ingests and processes n items of user's, a batch of at
// most per at a time, item i's text text(i).
func seedBatches(b testing.TB, e *env, user string, n, per int, text func(i int) string) {
	b.Helper()
	ctx := context.Background()
	type item struct {
		Text string `json:"text"`
	}
	for start := 0; start < n; start += per {
		var items []item
		for i := start; i < min(start+per, n); i++ {
			items = append(items, item{Text: text(i)})
		}
		body, _ := json.Marshal(map[string]any{"project": "bench", "items": items})
		a, err := e.svc.Ingest(ctx, user, body)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.svc.Process(ctx, a.JobID); err != nil {
			b.Fatal(err)
		}
	}
}
