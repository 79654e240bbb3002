package logsample

import (
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
)

// Full counts forget the keys whose interval has passed, whether or not
// they came again since their line, so keys that came twice and left
// cannot hold every place for ever; the times they came untold are
// counted on the overflow's line.
func TestFullCountsForgetTheQuiet(t *testing.T) {
	clk := testclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	c := New(time.Minute, clk.Now, 3)
	for _, k := range []string{"a", "b", "c"} {
		for i := range 2 {
			if _, _, due := c.Take(k); due != (i == 0) {
				t.Fatalf("%s, take %d: due %v", k, i+1, due)
			}
		}
	}
	if key, _, due := c.Take("d"); key != Overflow || !due {
		t.Fatalf("d in full counts within the minute: %q due %v, want the overflow's line", key, due)
	}
	clk.Advance(time.Hour)
	for _, k := range []string{"e", "f", "g"} {
		if key, _, due := c.Take(k); key != k || !due {
			t.Fatalf("%s an hour later: counted as %q, due %v; want its own line", k, key, due)
		}
	}
	if key, repeats, due := c.Take("h"); key != Overflow || !due || repeats != 3 {
		t.Fatalf("h: %q, %d repeats, due %v; want the overflow's line telling a, b and c's untold 3", key, repeats, due)
	}
}
