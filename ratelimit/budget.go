package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Budget is a token bucket: Burst tokens of capacity, refilled at Limit
// tokens per Window. "120/min,burst=60" holds at most 60 tokens and gains
// one every half second.
type Budget struct {
	Limit  int
	Window time.Duration
	Burst  int
}

// ParseBudget reads a budget written as <n>/<s|min|h>[,burst=<b>], the one
// syntax of brain's configuration. Without a burst, the burst is n.
func ParseBudget(s string) (Budget, error) {
	rate, burst, hasBurst := strings.Cut(strings.TrimSpace(s), ",")
	n, unit, ok := strings.Cut(rate, "/")
	if !ok {
		return Budget{}, fmt.Errorf("ratelimit: budget %q: want <n>/<s|min|h>[,burst=<b>]", s)
	}
	var b Budget
	var err error
	if b.Limit, err = positive(n); err != nil {
		return Budget{}, fmt.Errorf("ratelimit: budget %q: limit: %w", s, err)
	}
	switch strings.TrimSpace(unit) {
	case "s":
		b.Window = time.Second
	case "min":
		b.Window = time.Minute
	case "h":
		b.Window = time.Hour
	default:
		return Budget{}, fmt.Errorf("ratelimit: budget %q: window must be s, min or h", s)
	}
	b.Burst = b.Limit
	if hasBurst {
		k, v, ok := strings.Cut(strings.TrimSpace(burst), "=")
		if !ok || strings.TrimSpace(k) != "burst" {
			return Budget{}, fmt.Errorf("ratelimit: budget %q: want burst=<b> after the comma", s)
		}
		if b.Burst, err = positive(v); err != nil {
			return Budget{}, fmt.Errorf("ratelimit: budget %q: burst: %w", s, err)
		}
	}
	if err := b.Validate(); err != nil {
		return Budget{}, fmt.Errorf("ratelimit: budget %q: %w", s, err)
	}
	return b, nil
}

// MaxRefill is the longest a budget may take to refill its whole burst
// (Window/Limit × Burst). It keeps every time the limiters compute far
// from overflow, and refuses settings such as "1/h,burst=10000000", which
// would take over a thousand years to refill.
const MaxRefill = 30 * 24 * time.Hour

// Validate reports a budget that cannot be enforced: a limit or burst
// outside 1..2^30, a window that is not positive, or one that takes longer
// than [MaxRefill] to refill its burst.
func (b Budget) Validate() error {
	switch {
	case b.Limit < 1 || b.Limit > maxCount || b.Burst < 1 || b.Burst > maxCount:
		return fmt.Errorf("limit and burst must be 1 to %d", maxCount)
	case b.Window <= 0:
		return errors.New("the window must be positive")
	}
	interval := max(b.Window/time.Duration(b.Limit), 1)
	if time.Duration(b.Burst) > MaxRefill/interval {
		return fmt.Errorf("a burst of %d at %d per %v takes longer than %v to refill; lower the burst or raise the rate", b.Burst, b.Limit, b.Window, MaxRefill)
	}
	return nil
}

// ParseBudgets reads a list of budgets separated by ";", all of which a
// request must pass: "100/h; 10/s".
func ParseBudgets(s string) ([]Budget, error) {
	var out []Budget
	for _, part := range strings.Split(s, ";") {
		b, err := ParseBudget(part)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) > MaxLimits {
		return nil, fmt.Errorf("ratelimit: %q: at most %d budgets", s, MaxLimits)
	}
	return out, nil
}

// String writes b in the syntax ParseBudget reads.
func (b Budget) String() string {
	unit := "s"
	switch b.Window {
	case time.Minute:
		unit = "min"
	case time.Hour:
		unit = "h"
	}
	return fmt.Sprintf("%d/%s,burst=%d", b.Limit, unit, b.Burst)
}

// maxCount keeps budgets far from overflow in any arithmetic on them.
const maxCount = 1 << 30

func positive(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, errors.New("not a whole number")
	case n < 1:
		return 0, errors.New("must be at least 1")
	case n > maxCount:
		return 0, fmt.Errorf("must be at most %d", maxCount)
	}
	return n, nil
}
