package ingest

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// encodeBatch writes what json.Marshal of the storedBatch would mean, in
// exactly the bytes it allocates, and decodeBatch reads it back.
func TestEncodeBatch(t *testing.T) {
	at := time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC) // a negative Unix time
	b := Batch{Project: "p", Items: []Item{
		{Text: "plain", Kind: DefaultKind, Tags: []string{}},
		{Text: "a\"b\\c\x01\x02\x1f\x7f<&>\u2028é😀\n\t", Kind: "decision", Skill: "go", Tags: []string{"x", "é"}, OccurredAt: at},
		{Text: "later", Kind: "k", Tags: []string{"t"}, OccurredAt: time.UnixMilli(1767366245123).UTC()},
	}}
	data := encodeBatch(b)
	sb := storedBatch{V: batchVersion}
	for _, it := range b.Items {
		si := storedItem{Text: it.Text, Kind: it.Kind, Skill: it.Skill, Tags: it.Tags}
		if !it.OccurredAt.IsZero() {
			ms := it.OccurredAt.UnixMilli()
			si.OccurredAt = &ms
		}
		sb.Items = append(sb.Items, si)
	}
	var got, want any
	marshaled, _ := json.Marshal(sb)
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatalf("encodeBatch wrote no JSON: %v\n%s", err, data)
	}
	_ = json.Unmarshal(marshaled, &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("encodeBatch means\n%v\njson.Marshal\n%v", got, want)
	}
	items, err := decodeBatch([]byte(data), Job{ItemsTotal: len(b.Items)})
	if err != nil || !reflect.DeepEqual(items, b.Items) {
		t.Fatalf("decodeBatch = %+v, %v; want %+v", items, err, b.Items)
	}
	if !strings.HasPrefix(data, `{"v":1,"items":[{"text":"plain","kind":"note"}`) {
		t.Fatalf("encodeBatch wrote %s", data)
	}
}

// encodeBatch allocates the batch's JSON once, at its size: json.Marshal
// grew a buffer by doubling and then copied it.
func TestEncodeBatchAllocatesOnce(t *testing.T) {
	b := Batch{Project: "p"}
	for range MaxItems {
		b.Items = append(b.Items, Item{Text: strings.Repeat("x", 8000), Kind: DefaultKind, Tags: []string{"a", "b"}})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	data := encodeBatch(b)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(data))+64<<10 {
		t.Fatalf("encodeBatch of %d bytes allocated %d", len(data), got)
	}
}
