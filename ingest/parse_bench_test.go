// This file times the body's hot path: the scanner over any JSON, the
// parse of a batch, its check and its idempotency key.
//
//	go test -run '^$' -bench 'Scan|Parse|Key|Validate' -benchmem ./ingest

package ingest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchBatch is a valid batch of n items, each with every member, some
// text escaped: about 250 bytes an item.
func benchBatch(n int) []byte {
	type item struct {
		Text       string   `json:"text"`
		Kind       string   `json:"kind"`
		Skill      string   `json:"skill"`
		Tags       []string `json:"tags"`
		OccurredAt string   `json:"occurred_at"`
	}
	items := make([]item, n)
	for i := range items {
		items[i] = item{
			Text:       fmt.Sprintf("note %d: retry with backoff — \"quoted\" and a tab\there, then more words to make a note of it", i),
			Kind:       "note",
			Skill:      "go",
			Tags:       []string{"retry", "backoff", fmt.Sprint("t", i%7)},
			OccurredAt: "2026-01-02T15:04:05.123Z",
		}
	}
	b, err := json.Marshal(map[string]any{"ingest_id": strings.Repeat("ab", 32), "project": "bench", "items": items})
	if err != nil {
		panic(err)
	}
	return b
}

// benchJSON is JSON of every kind, numbers most: what skip reads.
func benchJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"rows": [`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": %d, "x": -%d.25e-3, "ok": true, "no": null, "f": false, "s": "a\u00e9\n", "xs": [0, 1.5, %d]}`, i, i, i*31)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkScan(b *testing.B) {
	data := benchJSON(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if good, f := validJSON(data, maxDepth); !good {
			b.Fatal(f.message())
		}
	}
}

func BenchmarkParse(b *testing.B) {
	data := benchBatch(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidate parses a batch whose every item has problems: the
// 422 path, which records them and skips the values of the wrong type.
func BenchmarkValidate(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"project": "bench", "items": [`)
	for i := range 1000 {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"text": %d, "kind": [1, 2.5e3, {"a": null}], "tags": "no"}`, i)
	}
	s.WriteString(`]}`)
	data := []byte(s.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err == nil {
			b.Fatal("no error")
		}
	}
}

func BenchmarkKey(b *testing.B) {
	data := benchBatch(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Key(data); err != nil {
			b.Fatal(err)
		}
	}
}
