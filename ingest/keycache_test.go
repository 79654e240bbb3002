package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The cache gives what was put, holds at most two generations, and keeps
// what is used.
func TestKeyCache(t *testing.T) {
	c := newKeyCache(4)
	sum := func(i int) [sha256.Size]byte { return sha256.Sum256(fmt.Appendf(nil, "body %d", i)) }
	k := func(i int) batchKey { return batchKey{ingestID: fmt.Sprint("id", i), fingerprint: fmt.Sprint("fp", i)} }
	for i := range 3 {
		if _, ok := c.get(sum(i)); ok {
			t.Fatalf("body %d found before it was put", i)
		}
		c.put(sum(i), k(i))
		if got, ok := c.get(sum(i)); !ok || got != k(i) {
			t.Fatalf("body %d: %+v %v, want %+v", i, got, ok, k(i))
		}
	}
	for i := 3; i < 20; i++ {
		c.get(sum(0)) // used all along: it stays
		c.put(sum(i), k(i))
		if n := len(c.cur) + len(c.old); n > 8 {
			t.Fatalf("%d entries held, want at most 2 × 4", n)
		}
	}
	if _, ok := c.get(sum(0)); !ok {
		t.Fatal("the body in use is gone")
	}
	if _, ok := c.get(sum(1)); ok {
		t.Fatal("an old body stayed")
	}
}

// acceptOnce is a store that accepts one batch, then replays it.
type acceptOnce struct {
	Store // nil: the service calls nothing else here
	job   *Job
}

func (s *acceptOnce) Replay(context.Context, string, string, string, time.Time) (Job, bool, error) {
	if s.job == nil {
		return Job{}, false, nil
	}
	return *s.job, true, nil
}

func (s *acceptOnce) Accept(_ context.Context, a Acceptance) (Job, bool, error) {
	s.job = &Job{ID: a.JobID, IngestID: a.IngestID, Status: StatusQueued}
	return *s.job, false, nil
}

// The service remembers the keys of valid batches only: an invalid body
// is parsed, and refused, each time it comes, and never fills the cache.
func TestServiceRemembersValidBatchesOnly(t *testing.T) {
	svc := NewService(&acceptOnce{}, Config{})
	held := func() int { return len(svc.keys.cur) + len(svc.keys.old) }
	for range 2 {
		_, err := svc.Ingest(context.Background(), "u", []byte(`{"project":"p","items":[]}`))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("an invalid body: %v", err)
		}
	}
	if held() != 0 {
		t.Fatalf("an invalid body is remembered: %d keys", held())
	}
	valid := []byte(`{"project":"p","items":[{"text":"x"}]}`)
	first, err := svc.Ingest(context.Background(), "u", valid)
	if err != nil || first.Replayed || held() != 1 {
		t.Fatalf("a valid body: %+v, %v, %d keys held", first, err, held())
	}
	if again, err := svc.Ingest(context.Background(), "u", valid); err != nil || !again.Replayed || again.JobID != first.JobID {
		t.Fatalf("the same bytes again: %+v, %v", again, err)
	}
}
