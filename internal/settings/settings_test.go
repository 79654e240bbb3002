// The parsers and formatters: a formatted default reads back as the
// value it came from, and a value out of bounds is refused.

package settings_test

import (
	"testing"
	"time"

	"github.com/brain-template/brain/internal/settings"
	"github.com/brain-template/brain/ratelimit"
)

func TestFormatDurationRoundTrips(t *testing.T) {
	for d, want := range map[time.Duration]string{
		168 * time.Hour: "168h", 24 * time.Hour: "24h", 30 * time.Second: "30s", time.Second: "1s",
		90 * time.Second: "1m30s", time.Hour + time.Second: "1h0m1s", 10 * time.Millisecond: "10ms", time.Minute: "1m",
	} {
		got := settings.FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		var back time.Duration
		if err := settings.Duration(0, 1000*time.Hour, &back)(got); err != nil || back != d {
			t.Errorf("%q reads back as %v, %v; want %v", got, back, err, d)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64MiB", 16 << 20: "16MiB", 1 << 30: "1GiB", 3 << 10: "3KiB", 1000: "1000", 1536 << 10: "1536KiB"} {
		got := settings.FormatSize(n)
		if got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		var back int64
		if err := settings.Size(1, 64<<30, &back)(got); err != nil || back != n {
			t.Errorf("%q reads back as %d, %v; want %d", got, back, err, n)
		}
	}
}

func TestParsersRefuseOutOfBounds(t *testing.T) {
	var i int
	var d time.Duration
	var s int64
	var b ratelimit.Rate
	for name, err := range map[string]error{
		"int below":      settings.Int(1, 16, &i)("0"),
		"int above":      settings.Int(1, 16, &i)("17"),
		"int text":       settings.Int(1, 16, &i)("four"),
		"duration above": settings.Duration(time.Second, time.Hour, &d)("2h"),
		"duration below": settings.Duration(time.Second, time.Hour, &d)("999ms"),
		"size unit":      settings.Size(1<<20, 1<<30, &s)("64MB"),
		"size below":     settings.Size(1<<20, 1<<30, &s)("1023KiB"),
		"size above":     settings.Size(1<<20, 1<<30, &s)("2GiB"),
		"rate":           settings.Rate(&b)("0/min"),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if i != 0 || d != 0 || s != 0 || b != (ratelimit.Rate{}) {
		t.Errorf("a refused value was stored: %v %v %v %v", i, d, s, b)
	}
	if err := settings.Int(1, 16, &i)(" 16 "); err != nil || i != 16 {
		t.Errorf("Int(\" 16 \") = %d, %v", i, err)
	}
}
