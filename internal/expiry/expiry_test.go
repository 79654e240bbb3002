package expiry_test

import (
	"testing"
	"time"

	"github.com/brain-template/brain/internal/expiry"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// A key is there until its time, and gone from then on.
func TestUntil(t *testing.T) {
	s := expiry.Set[string]{Max: 10}
	if s.Has("a", t0) {
		t.Fatal("the empty set has a key")
	}
	s.Add("a", t0.Add(time.Second), t0)
	if !s.Has("a", t0.Add(999*time.Millisecond)) {
		t.Fatal("a key is gone before its time")
	}
	if s.Has("a", t0.Add(time.Second)) {
		t.Fatal("a key is there at its time")
	}
	if s.Len() != 0 {
		t.Fatalf("an expired key looked up is kept: Len = %d", s.Len())
	}
}

// A full set drops the expired keys first, and only those when that
// makes room.
func TestFullDropsExpired(t *testing.T) {
	s := expiry.Set[int]{Max: 100}
	for i := range 100 {
		life := time.Hour
		if i%2 == 0 {
			life = time.Second
		}
		s.Add(i, t0.Add(life), t0)
	}
	now := t0.Add(time.Minute)
	s.Add(1000, now.Add(time.Hour), now)
	if s.Len() != 51 {
		t.Fatalf("Len = %d after the expired half went, want 51", s.Len())
	}
	for i := 1; i < 100; i += 2 {
		if !s.Has(i, now) {
			t.Fatalf("live key %d dropped while expired ones made room", i)
		}
	}
}

// A full set of live keys drops a tenth of them, no more, so that it stays
// bounded and the next adds find room.
func TestFullDropsATenth(t *testing.T) {
	s := expiry.Set[int]{Max: 100}
	for i := range 100 {
		s.Add(i, t0.Add(time.Hour), t0)
	}
	s.Add(100, t0.Add(time.Hour), t0)
	if s.Len() != 90 {
		t.Fatalf("Len = %d, want 89 kept and the new one", s.Len())
	}
	if !s.Has(100, t0) {
		t.Fatal("the key added to a full set is not there")
	}
	for i := range 9 { // room for these without another drop
		s.Add(200+i, t0.Add(time.Hour), t0)
	}
	if s.Len() != 99 {
		t.Fatalf("Len = %d, want 99", s.Len())
	}
}
