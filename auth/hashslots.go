package auth

import (
	"context"
	"time"
)

// hashSlots bounds how many password hashes run at once. An argon2id hash
// holds its whole Memory (19 MiB by default) while it runs, and it needs a
// core: without a bound, a flood of logins takes as much memory as it has
// requests in flight, and every one of them, health checks included, waits
// behind all the others. With one, the flood waits for a slot and, past a
// short wait, is turned away (ErrBusy) while memory stays at
// slots × Memory.
type hashSlots chan struct{}

func newHashSlots(n int) hashSlots { return make(hashSlots, n) }

// run runs f in a slot. It waits for one at most wait (then ErrBusy), or,
// when wait is negative, as long as ctx allows; a done ctx returns its
// error.
func (h hashSlots) run(ctx context.Context, wait time.Duration, f func()) error {
	select {
	case h <- struct{}{}:
	default:
		var expired <-chan time.Time // nil, never ready: no bound
		if wait >= 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			expired = t.C
		}
		select {
		case h <- struct{}{}:
		case <-expired:
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-h }()
	f()
	return nil
}
