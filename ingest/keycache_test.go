package ingest

import (
	"crypto/sha256"
	"fmt"
	"testing"
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
