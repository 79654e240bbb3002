package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// words make up the items' text: a vocabulary of the kind of note an agent
// or a person keeps, so that the full-text index a job builds sees
// ordinary words rather than one long token.
var words = strings.Fields(`the build failed on the release branch because the migration
ran twice; retry with a fresh cache and check the logs of the worker pool before
merging. deploy notes: rotate the api key, restart the queue, watch latency and error
rates for an hour. the customer asked about exports to csv and the billing page;
follow up on friday with a summary of what changed in the schema and the index.
tests flaky under load when the database connection pool is small; raise it or
batch the writes. remember the postgres vacuum settings and the sqlite wal size.`)

// skills and tags are the few values a batch's items name.
var (
	skills = []string{"go", "sql", "ops", "support", ""}
	tags   = []string{"bench", "deploy", "db", "followup", "perf", "ci"}
)

// A batcher makes the distinct batches of one client: each call of next
// returns a new body, unlike any other client's or any earlier one.
type batcher struct {
	client    int
	seq       int
	items     int
	textBytes int
	withID    bool
	at        time.Time // occurred_at of the first item; each batch's items are a second apart
}

// item is one item of a batch, as the API takes it.
type item struct {
	Text       string   `json:"text"`
	Kind       string   `json:"kind,omitempty"`
	Skill      string   `json:"skill,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	OccurredAt string   `json:"occurred_at,omitempty"`
}

// body is an ingest request's body.
type body struct {
	IngestID string `json:"ingest_id,omitempty"`
	Project  string `json:"project"`
	Items    []item `json:"items"`
}

// next returns the client's next batch: b.items items of about b.textBytes
// bytes of text each. Its first item's text starts with a token naming the
// client and the batch, which makes the body, and so its derived key,
// distinct. With b.withID the body names an ingest_id of its own (64 hex
// digits from the same token); otherwise the server derives the key.
func (b *batcher) next() []byte {
	b.seq++
	token := fmt.Sprintf("c%d-b%d", b.client, b.seq)
	out := body{Project: "bench-" + strconv.Itoa(b.client%4), Items: make([]item, b.items)}
	if b.withID {
		out.IngestID = fmt.Sprintf("%064x", uint64(b.client)<<40|uint64(b.seq))
	}
	for i := range out.Items {
		var t strings.Builder
		t.WriteString(token)
		t.WriteString("-i")
		t.WriteString(strconv.Itoa(i))
		for w := b.seq*7 + i*13 + b.client; t.Len() < b.textBytes; w++ {
			t.WriteByte(' ')
			t.WriteString(words[w%len(words)])
		}
		it := item{Text: t.String(), Tags: []string{tags[(b.seq+i)%len(tags)]}}
		if i%3 == 0 {
			it.Kind = "decision"
		}
		it.Skill = skills[(b.client+i)%len(skills)]
		if i%2 == 0 {
			it.OccurredAt = b.at.Add(time.Duration(b.seq*b.items+i) * time.Second).UTC().Format(time.RFC3339)
		}
		out.Items[i] = it
	}
	raw, err := json.Marshal(out)
	if err != nil {
		panic(err) // strings and slices of strings always marshal
	}
	return raw
}
