package api

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/internal/expiry"
)

// refusedIPs remembers the addresses the ip plane refused, each until its
// budget would admit a request again; at most maxRefusedIPs of them.
type refusedIPs struct {
	n     atomic.Int32 // until.Len(), read without the lock on every request
	mu    sync.Mutex
	until expiry.Set[string]
}

const maxRefusedIPs = 100_000

func (r *refusedIPs) add(ip string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until.Max = maxRefusedIPs // the zero refusedIPs is ready: its bound is set here
	r.until.Add(ip, until, now)
	r.n.Store(int32(r.until.Len()))
}

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
