// Package settings is the row type of the settings table (a flag and an
// environment variable each) and the parsers and formatters rows share. A
// row's Default is formatted from the constant the code uses, never restated.
package settings

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// A Setting ties a flag and an environment variable to a value; Set parses
// text into the row's field, its error saying what is wanted.
type Setting struct {
	Flag, Env, Default, Usage string
	Secret                    bool // a password: never shown in the usage or an error
	Set                       func(v string) error
}

// A Table is one package's rows, and Families: the prefixes of its rate-limit
// variables, under which a variable that is no setting stops start-up.
type Table struct {
	Rows     []Setting
	Families []string
}

// Int reads a whole number from lo to hi into dst.
func Int(lo, hi int, dst *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a whole number from %d to %d", lo, hi)
		}
		*dst = n
		return nil
	}
}

// Duration reads a duration from least to most into dst.
func Duration(least, most time.Duration, dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < least || d > most {
			return fmt.Errorf("want a duration from %v to %v, such as 15s, 30m or 24h", least, most)
		}
		*dst = d
		return nil
	}
}

// Size reads a number of bytes, lo to hi, into dst, with or without a suffix KiB, MiB or GiB.
func Size(lo, hi int64, dst *int64) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		unit := int64(1)
		for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
			if n, ok := strings.CutSuffix(v, suffix); ok {
				v, unit = strings.TrimSpace(n), u
			}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo/unit || n > hi/unit || n*unit < lo {
			return fmt.Errorf("want a number of bytes from %d (%d MiB) to %d (%d GiB), such as 64MiB", lo, lo>>20, hi, hi>>30)
		}
		*dst = n * unit
		return nil
	}
}

// Rate reads one rate, <n>/<s|min|h>[,burst=<b>], into dst.
func Rate(dst *ratelimit.Rate) func(string) error { return Parsed(dst, ratelimit.ParseRate) }

// Parsed reads a value with parse into dst; a refused value leaves dst as it is.
func Parsed[T any](dst *T, parse func(string) (T, error)) func(string) error {
	return func(v string) error {
		x, err := parse(v)
		if err == nil {
			*dst = x
		}
		return err
	}
}

// FormatDuration is d as a user would type it: 168h, not 168h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// FormatSize is n bytes in the largest of GiB, MiB and KiB that divides it.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
