package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Rate is a token bucket: Burst tokens, refilled at Limit per Window.
type Rate struct {
	Limit  int
	Window time.Duration
	Burst  int
}

// ParseRate reads <n>/<s|min|h>[,burst=<b>]; the burst defaults to n.
func ParseRate(s string) (Rate, error) {
	rate, burst, hasBurst := strings.Cut(strings.TrimSpace(s), ",")
	n, unit, ok := strings.Cut(rate, "/")
	if !ok {
		return Rate{}, fmt.Errorf("ratelimit: rate %q: want <n>/<s|min|h>[,burst=<b>]", s)
	}
	var r Rate
	var err error
	if r.Limit, err = whole(n); err != nil {
		return Rate{}, fmt.Errorf("ratelimit: rate %q: limit: %w", s, err)
	}
	switch strings.TrimSpace(unit) {
	case "s":
		r.Window = time.Second
	case "min":
		r.Window = time.Minute
	case "h":
		r.Window = time.Hour
	default:
		return Rate{}, fmt.Errorf("ratelimit: rate %q: window must be s, min or h", s)
	}
	r.Burst = r.Limit
	if hasBurst {
		k, v, ok := strings.Cut(strings.TrimSpace(burst), "=")
		if !ok || strings.TrimSpace(k) != "burst" {
			return Rate{}, fmt.Errorf("ratelimit: rate %q: want burst=<b> after the comma", s)
		}
		if r.Burst, err = whole(v); err != nil {
			return Rate{}, fmt.Errorf("ratelimit: rate %q: burst: %w", s, err)
		}
	}
	if err := r.Validate(); err != nil {
		return Rate{}, fmt.Errorf("ratelimit: rate %q: %w", s, err)
	}
	return r, nil
}

// MaxRefill is the longest a rate may take to refill its whole burst; it
// keeps the limiters' times far from overflow.
const MaxRefill = 30 * 24 * time.Hour

// Validate reports a rate that cannot be enforced.
func (r Rate) Validate() error {
	switch {
	case r.Limit < 1 || r.Limit > maxCount || r.Burst < 1 || r.Burst > maxCount:
		return fmt.Errorf("limit and burst must be 1 to %d", maxCount)
	case r.Window <= 0:
		return errors.New("the window must be positive")
	}
	interval := max(r.Window/time.Duration(r.Limit), 1)
	if time.Duration(r.Burst) > MaxRefill/interval {
		return fmt.Errorf("a burst of %d at %d per %v takes longer than %v to refill; lower the burst or raise the rate", r.Burst, r.Limit, r.Window, MaxRefill)
	}
	return nil
}

// ParseRates reads rates separated by ";", such as "100/h; 10/s".
func ParseRates(s string) ([]Rate, error) {
	var out []Rate
	for _, part := range strings.Split(s, ";") {
		r, err := ParseRate(part)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) > MaxLimits {
		return nil, fmt.Errorf("ratelimit: %q: at most %d rates", s, MaxLimits)
	}
	return out, nil
}

// String writes r in the syntax ParseRate reads.
func (r Rate) String() string {
	unit := "s"
	switch r.Window {
	case time.Minute:
		unit = "min"
	case time.Hour:
		unit = "h"
	}
	return fmt.Sprintf("%d/%s,burst=%d", r.Limit, unit, r.Burst)
}

// maxCount keeps rates far from overflow in any arithmetic on them.
const maxCount = 1 << 30

func whole(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not a whole number")
	}
	return n, nil
}
