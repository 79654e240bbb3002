package api

import (
	"sync"
	"sync/atomic"
	"time"
)

// refusedIPs remembers the addresses the ip plane refused, each until its
// budget would admit a request again. requireCaller checks the
// credentials such an address sends against the caches only. It holds at
// most maxRefusedIPs addresses; past that, expired ones go, then an
// arbitrary tenth (those are still refused by the plane, at the cost of
// a lookup each).
type refusedIPs struct {
	n     atomic.Int32 // len(until), read without the lock on every request
	mu    sync.Mutex
	until map[string]time.Time
}

const maxRefusedIPs = 100_000

// add remembers that ip is refused until until; now is the time of the
// refusal.
func (r *refusedIPs) add(ip string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.until == nil {
		r.until = map[string]time.Time{}
	}
	if len(r.until) >= maxRefusedIPs {
		for k, t := range r.until {
			if !now.Before(t) {
				delete(r.until, k)
			}
		}
		for k := range r.until { // still full: an arbitrary tenth goes, so the next adds are cheap
			if len(r.until) < maxRefusedIPs*9/10 {
				break
			}
			delete(r.until, k)
		}
	}
	r.until[ip] = until
	r.n.Store(int32(len(r.until)))
}

// refusing reports whether ip was refused and its budget would not admit
// a request yet at now.
func (r *refusedIPs) refusing(ip string, now time.Time) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.until[ip]
	if ok && !now.Before(t) {
		delete(r.until, ip)
		r.n.Store(int32(len(r.until)))
		return false
	}
	return ok
}
