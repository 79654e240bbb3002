package streams

import (
	"context"
	"time"
)

// Before a cap refuses an open, the user's streams on every replica write
// a heartbeat now and another probeGap later: a balancer that does not pass
// a client's close on fails the second write to a gone client, so the dead
// stream frees its slot before the open tries again, probeWait later.
const (
	probeGap   = 250 * time.Millisecond // longer than a balancer's round trip to clients
	probeWait  = 2 * probeGap
	probeEvent = "stream.probe" // the type of the hub entries carrying a probe, of the user in Data
)

// A prober is a hub that carries probes to every replica's onProbe funcs.
type prober interface {
	probe(ctx context.Context, user string) error
	onProbe(f func(user string))
}

// probe has user's streams on every replica prove their clients are there
// and waits probeWait (with the user's other opens); it reports whether it did.
func (p *Runtime) probe(ctx context.Context, user string) bool {
	if p.prober == nil {
		return false
	}
	done := p.probing.DoChan(user, func() (any, error) {
		if err := p.prober.probe(ctx, user); err != nil {
			p.s.LogOutage(ctx, err)
		}
		time.Sleep(probeWait)
		return nil, nil
	})
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Runtime) poke(user string) {
	p.pokeNow(user)
	time.AfterFunc(probeGap, func() { p.pokeNow(user) })
}

func (p *Runtime) pokeNow(user string) {
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

func (h *MemoryHub) probe(_ context.Context, user string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliverLocked(Event{Type: probeEvent, Data: []byte(user)}, eventID{})
	return nil
}

func (h *RedisHub) probe(ctx context.Context, user string) error {
	_, err := h.add(ctx, Event{Type: probeEvent, Data: []byte(user)})
	return err
}

func (h *ShardedRedisHub) onProbe(probed func(user string)) {
	for _, s := range h.shards {
		s.onProbe(probed)
	}
}

func (h *ShardedRedisHub) probe(ctx context.Context, user string) error {
	return h.shard(user).probe(ctx, user)
}
