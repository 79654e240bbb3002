// The probe: before a cap refuses an open, the streams of the caller's
// user on every replica write a heartbeat at once and another probeGap
// later. A balancer that does not pass a client's close on (haproxy
// without abortonclose) fails the second write to a gone client and
// closes the replica's side, so the dead stream ends and frees its slot
// before the open tries again, probeWait later.

package streams

import (
	"context"
	"time"
)

const (
	// probeGap is longer than a round trip between a balancer and its
	// clients, so the reset the first heartbeat draws is back for the second.
	probeGap = 250 * time.Millisecond
	// probeWait covers the second heartbeat, the balancer's close and the
	// slots' release, on any replica.
	probeWait = 2 * probeGap
	// probeEvent is the type of the hub entries that carry a probe; their
	// Data is the user, and they go to no user.
	probeEvent = "stream.probe"
)

// A prober is a hub that carries probes to every replica's hub, which
// calls the functions given to onProbe.
type prober interface {
	probe(ctx context.Context, user string) error
	onProbe(f func(user string))
}

// probe has the streams of user on every replica prove their clients are
// there, and waits probeWait; the opens of the user refused meanwhile
// wait for the same probe. It reports whether it waited.
func (p *Plane) probe(ctx context.Context, user string) bool {
	if p.prober == nil {
		return false
	}
	p.mu.Lock()
	done, waiting := p.probing[user]
	if !waiting {
		done = make(chan struct{})
		p.probing[user] = done
	}
	p.mu.Unlock()
	if !waiting {
		if err := p.prober.probe(ctx, user); err != nil {
			p.s.LogOutage(ctx, err)
		}
		time.AfterFunc(probeWait, func() {
			p.mu.Lock()
			delete(p.probing, user)
			p.mu.Unlock()
			close(done)
		})
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// poke has each stream of user on this replica write a heartbeat now and
// another probeGap later.
func (p *Plane) poke(user string) {
	p.pokeNow(user)
	time.AfterFunc(probeGap, func() { p.pokeNow(user) })
}

func (p *Plane) pokeNow(user string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.byUser[user] {
		select {
		case st.probe <- struct{}{}:
		default: // one is pending already
		}
	}
}

func (f *fanout) onProbe(probed func(user string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probed = append(f.probed, probed)
}

func (h *MemoryHub) onProbe(probed func(user string)) { h.f.onProbe(probed) }

func (h *MemoryHub) probe(_ context.Context, user string) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.deliverLocked(Event{Type: probeEvent, Data: []byte(user)}, eventID{})
	return nil
}

func (h *RedisHub) onProbe(probed func(user string)) { h.f.onProbe(probed) }

// probe adds an entry, to no user, that every replica's Run hands to its
// probed functions.
func (h *RedisHub) probe(ctx context.Context, user string) error {
	_, err := h.add(ctx, Event{Type: probeEvent, Data: []byte(user)})
	return err
}

func (h *ShardedRedisHub) onProbe(probed func(user string)) {
	for _, s := range h.shards {
		s.onProbe(probed)
	}
}

// probe goes through the user's shard: every replica reads them all.
func (h *ShardedRedisHub) probe(ctx context.Context, user string) error {
	return h.shard(user).probe(ctx, user)
}
