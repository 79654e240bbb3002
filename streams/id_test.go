package streams_test

import (
	"slices"
	"testing"

	"github.com/brain-template/brain/streams"
)

func TestCompareIDs(t *testing.T) {
	ordered := []string{"0-1", "1-0", "1-2", "1-10", "9-5", "10-0", "18446744073709551615-0", "18446744073709551615-18446744073709551615"}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := streams.CompareIDs(a, b); got != want {
				t.Errorf("CompareIDs(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	// What is not an id orders before every id, and among its kind as a
	// string: a total order on any strings.
	for _, g := range garbage {
		if streams.CompareIDs(g, "0-1") != -1 || streams.CompareIDs("0-1", g) != 1 || streams.CompareIDs(g, g) != 0 {
			t.Errorf("%.30q does not order before every id", g)
		}
	}
	all := append(slices.Clone(garbage), ordered...)
	slices.Reverse(all)
	slices.SortFunc(all, streams.CompareIDs)
	if !slices.Equal(all[len(all)-len(ordered):], ordered) {
		t.Errorf("sorted: %q", all[len(all)-len(ordered):])
	}
}

// FuzzCompareIDs: CompareIDs never panics, is antisymmetric, and equal
// only for equal strings.
func FuzzCompareIDs(f *testing.F) {
	for _, s := range append(garbage, "1-1", "10-0", "0-0") {
		f.Add(s, "9-5")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		x, y := streams.CompareIDs(a, b), streams.CompareIDs(b, a)
		if x != -y || (x == 0) != (a == b) {
			t.Fatalf("CompareIDs(%q, %q) = %d, reversed %d", a, b, x, y)
		}
	})
}
