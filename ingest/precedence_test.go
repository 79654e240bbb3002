package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// The answers that do not depend on writing come without a write: an
// invalid body is the client's fault whatever the store's state, and a
// reused key is told apart by a read.

// withKey is a batch of one item under a fixed ingest_id.
func withKey(text string) string {
	return `{"ingest_id":"` + strings.Repeat("a", 64) + `","project":"brain","items":[{"text":"` + text + `"}]}`
}

// An invalid body during a store outage is a *ValidationError, not
// ErrUnavailable.
func TestInvalidBodyDuringOutage(t *testing.T) {
	db, stall := storetest.OpenStallable(t, store.Postgres)
	db.Timeout = 300 * time.Millisecond
	e := newEnv(t, db)
	stall.Start()
	defer stall.Stop()
	_, err := e.svc.Ingest(context.Background(), "alice", []byte(`{"ingest_id":"`+strings.Repeat("b", 64)+`","project":"brain","items":[]}`))
	var ve *ingest.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("an invalid body during an outage: err = %v, want a *ValidationError", err)
	}
}

// A reused key is ErrKeyReused while another writer holds SQLite's write
// lock: the replay's read answers it.
func TestReusedKeyNeedsNoWriteLock(t *testing.T) {
	db, stall := storetest.OpenStallable(t, store.SQLite)
	db.Timeout = 300 * time.Millisecond
	e := newEnv(t, db)
	e.ingest(t, "alice", withKey("one"))
	stall.Start()
	defer stall.Stop()
	if r, err := e.svc.Ingest(context.Background(), "alice", []byte(withKey("one"))); err != nil || !r.Replayed {
		t.Fatalf("a replay under the write lock: %+v, %v; want a replay", r, err)
	}
	if _, err := e.svc.Ingest(context.Background(), "alice", []byte(withKey("two"))); !errors.Is(err, ingest.ErrKeyReused) {
		t.Fatalf("a reused key under the write lock: err = %v, want ErrKeyReused", err)
	}
}
