package ingest

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// The cache gives what Key gives, for bodies it holds and bodies it does
// not, holds at most two generations, and keeps what is used.
func TestKeyCache(t *testing.T) {
	c := newKeyCache(4)
	body := func(i int) []byte { return []byte(fmt.Sprintf(`{"project":"p","items":[{"text":"note %d"}]}`, i)) }
	for round := range 2 { // computed, then remembered
		for i := range 3 {
			id, fp, err := c.key(body(i))
			wantID, wantFP, _ := Key(body(i))
			if err != nil || id != wantID || fp != wantFP {
				t.Fatalf("round %d, body %d: %s %s %v; want Key's %s %s", round, i, id, fp, err, wantID, wantFP)
			}
		}
	}
	if _, _, err := c.key([]byte(`[1]`)); err == nil {
		t.Fatal("a body Key refuses: no error")
	}
	for i := 3; i < 20; i++ {
		c.key(body(0)) // used all along: it stays
		c.key(body(i))
		if n := len(c.cur) + len(c.old); n > 8 {
			t.Fatalf("%d entries held, want at most 2 × 4", n)
		}
	}
	held := func(b []byte) bool {
		_, cur := c.cur[sha256.Sum256(b)]
		_, old := c.old[sha256.Sum256(b)]
		return cur || old
	}
	if !held(body(0)) || held(body(1)) {
		t.Fatalf("the body in use is gone (%v) or an old one stayed (%v)", !held(body(0)), held(body(1)))
	}
}
