package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/brain-template/brain/ingest"
)

// TestBatchesAreValidAndDistinct checks the bodies ingestflood sends
// against brain's own rules: every batch parses (a 422 would count as an
// error, not a first ingest), has the items asked for, with about the
// text size asked for, and no two batches, of one client or of two, share
// an idempotency key (a shared key would be a replay, or a 422 for a key
// reused, in the first phase). The same holds with an ingest_id in the
// body.
func TestBatchesAreValidAndDistinct(t *testing.T) {
	for _, withID := range []bool{false, true} {
		keys := map[string]string{}
		at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
		for c := range 3 {
			b := &batcher{client: c, items: 10, textBytes: 200, withID: withID, at: at}
			for range 50 {
				raw := b.next()
				batch, err := ingest.Parse(raw)
				if err != nil {
					t.Fatalf("withID %v: client %d batch %d does not parse: %v\n%s", withID, c, b.seq, err, raw)
				}
				if len(batch.Items) != 10 {
					t.Fatalf("withID %v: %d items, want 10", withID, len(batch.Items))
				}
				for _, it := range batch.Items {
					if n := len(it.Text); n < 200 || n > 200+20 {
						t.Fatalf("withID %v: an item of %d bytes, want about 200: %q", withID, n, it.Text)
					}
				}
				id, _, err := ingest.Key(raw)
				if err != nil {
					t.Fatal(err)
				}
				if withID != (batch.IngestID != "") {
					t.Fatalf("withID %v: ingest_id %q", withID, batch.IngestID)
				}
				where := "client " + strconv.Itoa(c)
				if prev, dup := keys[id]; dup {
					t.Fatalf("withID %v: %s batch %d has the key of %s", withID, where, b.seq, prev)
				}
				keys[id] = where
			}
		}
	}
}

// TestPct checks the nearest-rank quantiles the report prints.
func TestPct(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{.5, 50}, {.99, 99}, {1, 100}, {0, 1}} {
		if got := pct(s, c.p); got != c.want {
			t.Errorf("pct(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := pct(nil, .5); got != 0 {
		t.Errorf("pct(nil) = %v, want 0", got)
	}
	if got := pct(s[:1], .99); got != 1 {
		t.Errorf("pct of one = %v, want 1", got)
	}
}
