package page_test

import (
	"encoding/base64"
	"regexp"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/page"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString

// A cursor's wire form is the one clients hold: a fixed string decodes to
// its place, and a place goes round.
func TestEncodeDecode(t *testing.T) {
	c := page.Cursor{CreatedAt: time.UnixMilli(1700000000123).UTC(), ID: "0123456789abcdef0123456789abcdef"}
	wire := base64.RawURLEncoding.EncodeToString([]byte("1700000000123.0123456789abcdef0123456789abcdef"))
	if got := page.Encode(c); got != wire {
		t.Fatalf("Encode = %q, want %q", got, wire)
	}
	got, err := page.Decode(wire, hex32)
	if err != nil || got != c {
		t.Fatalf("Decode = %+v, %v; want %+v", got, err, c)
	}
	if page.Encode(page.Cursor{}) != "" {
		t.Fatal("the zero cursor is not the empty string")
	}
	if got, err := page.Decode("", hex32); err != nil || got != (page.Cursor{}) {
		t.Fatalf(`Decode("") = %+v, %v`, got, err)
	}
}

// Decode refuses what Encode cannot have written, or an id of another
// list.
func TestDecodeRefuses(t *testing.T) {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"not base64!",
		b64("1700000000123"), // no id
		b64("soon.0123456789abcdef0123456789abcdef"),              // no time
		b64("0.0123456789abcdef0123456789abcdef"),                 // not a time an item has
		b64("1700000000123.00000000-0000-4000-8000-000000000000"), // another list's id
	} {
		if _, err := page.Decode(s, hex32); err != page.ErrBad {
			t.Fatalf("Decode(%q) = %v, want ErrBad", s, err)
		}
	}
}

// Cut keeps limit items and places the cursor on the last kept, only
// when more were fetched.
func TestCut(t *testing.T) {
	place := func(n int) page.Cursor { return page.Cursor{CreatedAt: time.UnixMilli(int64(n)), ID: "x"} }
	items, next := page.Cut([]int{5, 4, 3}, 2, place)
	if len(items) != 2 || next != place(4) {
		t.Fatalf("Cut of 3 to 2 = %v, %+v", items, next)
	}
	items, next = page.Cut([]int{5, 4}, 2, place)
	if len(items) != 2 || next != (page.Cursor{}) {
		t.Fatalf("Cut of the last page = %v, %+v", items, next)
	}
}
