package streams

import (
	"context"
	"time"
)

const (
	// probeGap is the time between a probe's two heartbeats: longer than
	// a round trip between a balancer and its clients, so that the reset
	// the first draws from a gone client is back when the second comes.
	probeGap = 250 * time.Millisecond
	// probeWait is how long a refused open waits for its probe: the
	// second heartbeat, then the balancer's close, the stream's end and
	// the release of its slots, on any replica.
	probeWait = 2 * probeGap
	// probeEvent is the type of the hub's entries that carry a probe to
	// every replica; their Data is the user, and they go to no user.
	probeEvent = "stream.probe"
)

// A prober is a hub that carries probes: probe has every replica's hub
// call the functions given to onProbe with user. The hubs of this package
// are probers.
type prober interface {
	probe(ctx context.Context, user string) error
	onProbe(f func(user string))
}

// probe has the streams of user, on every replica, prove that their
// clients are still there (poke), through the hub, and waits probeWait.
// The opens of one user that are refused meanwhile on this replica wait
// for the same probe, so a client that loops on refusals sends the hub
// one probe a probeWait at most. It reports whether it waited: not when
// the hub carries no probes, nor when ctx ended first.
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

// poke has each stream of user on this replica write a heartbeat now,
// and another probeGap later (Pump writes them).
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

// probe calls this process's probed functions: it is every replica.
func (h *MemoryHub) probe(_ context.Context, user string) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.deliverLocked(Event{Type: probeEvent, Data: []byte(user)}, eventID{})
	return nil
}

func (h *RedisHub) onProbe(probed func(user string)) { h.f.onProbe(probed) }

// probe adds an entry to the stream that every replica's Run hands to its
// probed functions; it is to no user, so no subscription sees it or
// replays it.
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
