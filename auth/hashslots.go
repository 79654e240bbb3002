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
//
// A flood must not turn away its victims too: a hash whose login has
// failed recently (its username or its address: Attempt.failing) waits
// behind every other. A slot that frees goes to a waiting hash of the
// first kind when there is one (handed over on first), else to any.
type hashSlots struct {
	taken chan struct{} // one value per slot in use
	first chan struct{} // a slot handed from one hash to a waiting first one
}

func newHashSlots(n int) hashSlots {
	return hashSlots{taken: make(chan struct{}, n), first: make(chan struct{})}
}

// run runs f in a slot. It waits for one at most wait (then ErrBusy), or,
// when wait is negative, as long as ctx allows; a done ctx returns its
// error. When last, it takes only a slot no other hash waits for first.
func (h hashSlots) run(ctx context.Context, wait time.Duration, last bool, f func()) error {
	select {
	case h.taken <- struct{}{}:
	default:
		var expired <-chan time.Time // nil, never ready: no bound
		if wait >= 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			expired = t.C
		}
		handed := h.first
		if last {
			handed = nil // never ready: a last hash is handed nothing
		}
		select {
		case h.taken <- struct{}{}:
		case <-handed: // the slot of the hash that handed it, still taken
		case <-expired:
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer h.free()
	f()
	return nil
}

// free hands the slot to a hash that waits for it first, or frees it.
func (h hashSlots) free() {
	select {
	case h.first <- struct{}{}:
	default:
		<-h.taken
	}
}
