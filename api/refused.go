package api

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/internal/expiry"
)

// refusedIPs remembers the addresses the ip plane refused, each until its
// budget would admit a request again. requireCaller checks the
// credentials such an address sends against the caches only. It holds at
// most maxRefusedIPs addresses; past that, expired ones go, then an
// arbitrary tenth (those are still refused by the plane, at the cost of
// a lookup each).
type refusedIPs struct {
	n     atomic.Int32 // until.Len(), read without the lock on every request
	mu    sync.Mutex
	until expiry.Set[string]
}

const maxRefusedIPs = 100_000

// add remembers that ip is refused until until; now is the time of the
// refusal.
func (r *refusedIPs) add(ip string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until.Max = maxRefusedIPs // the zero refusedIPs is ready: its bound is set here
	r.until.Add(ip, until, now)
	r.n.Store(int32(r.until.Len()))
}

// refusing reports whether ip was refused and its budget would not admit
// a request yet at now.
func (r *refusedIPs) refusing(ip string, now time.Time) bool {
	if r.n.Load() == 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.until.Has(ip, now)
	r.n.Store(int32(r.until.Len()))
	return ok
}
