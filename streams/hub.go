package streams

import (
	"context"
	"sort"
	"time"
)

// MemoryHub is a [Hub] for one process. Create it with [NewMemoryHub]; it
// is safe for concurrent use.
//
// It keeps the newest events, of all users together, in a ring of fixed
// size for reconnecting streams to replay. Publish gives each event an id
// of the form Redis gives ("<unix ms>-<seq>"), strictly increasing: when
// the clock stands still or goes back, the sequence counts on within the
// newest millisecond seen.
//
// Subscribe's Gap is set when events after its after may not be kept:
// when the ring has dropped an event newer than after, and also when
// after is older than the hub's first event or newer than its newest (an
// id of another process, say of this server before a restart, whose last
// events this one never had), or not an id at all. A subscriber told of a
// gap should refetch the state its events describe.
type MemoryHub struct {
	// Now, when set, is the clock of event ids; by default time.Now. Set
	// it before the hub is first used.
	Now func() time.Time

	f    fanout   // its lock guards the fields below too
	ring []keptEv // the newest events, oldest at head; len is the hub's replay
	head int
	n    int // events in ring

	last  eventID // the newest id given
	floor eventID // every event after floor is in ring: the newest dropped, else the first
	used  bool    // some id was given
}

// A keptEv is an event in the ring, with its id already read.
type keptEv struct {
	id eventID
	ev Event
}

// NewMemoryHub returns a hub that keeps the newest replay events (of all
// users together) for Subscribe's Replay, and buffers up to buffer events
// per subscription before it ends a subscriber that does not read them
// with [errSlow]. It panics unless replay >= 0 and buffer >= 1.
func NewMemoryHub(replay, buffer int) *MemoryHub {
	if replay < 0 {
		panic("streams: a hub cannot keep fewer than 0 events")
	}
	h := &MemoryHub{ring: make([]keptEv, replay)}
	h.f.init(buffer)
	return h
}

// Publish gives ev an id, keeps it for replay and sends it to ev.To's
// subscriptions. It never waits for a subscriber and never fails. The hub
// keeps ev.Data as it is: do not change it afterwards.
func (h *MemoryHub) Publish(_ context.Context, ev Event) (string, error) {
	now := h.now()
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	id := h.nextLocked(now)
	ev.ID = id.String()
	h.keepLocked(keptEv{id, ev})
	h.f.deliverLocked(ev, id)
	return ev.ID, nil
}

// Subscribe follows user's events. Its Replay holds the kept events of
// user after after, and it is registered in the same step, so every event
// after after is either in Replay or arrives on Events, never both. It
// never fails.
func (h *MemoryHub) Subscribe(_ context.Context, user, after string) (*Subscription, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	s := h.f.addLocked(user, eventID{})
	s.At = h.last.String()
	if after == "" {
		return s, nil
	}
	a, ok := parseID(after)
	if !ok || !h.used || a.compare(h.floor) < 0 || a.compare(h.last) > 0 {
		s.Gap = true
	}
	if ok {
		s.Replay = h.replayLocked(user, a)
	}
	return s, nil
}

func (h *MemoryHub) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// nextLocked returns the id of an event published at now: in now's
// millisecond, after the last id given, and never 0-0.
func (h *MemoryHub) nextLocked(now time.Time) eventID {
	id := eventID{ms: uint64(max(now.UnixMilli(), 0))}
	switch {
	case !h.used && id.ms == 0:
		h.used, id.seq, h.floor = true, 1, eventID{0, 1} // 0-0 is no id in Redis, nor here
	case !h.used:
		h.used, h.floor = true, id
	case id.ms <= h.last.ms:
		id = eventID{h.last.ms, h.last.seq + 1}
	}
	h.last = id
	return id
}

// keepLocked adds k to the ring, dropping the oldest event when full.
func (h *MemoryHub) keepLocked(k keptEv) {
	if len(h.ring) == 0 {
		h.floor = k.id
		return
	}
	i := (h.head + h.n) % len(h.ring)
	if h.n == len(h.ring) {
		h.floor = h.ring[h.head].id
		h.head = (h.head + 1) % len(h.ring)
	} else {
		h.n++
	}
	h.ring[i] = k
}

// replayLocked returns the kept events of user after a, oldest first.
func (h *MemoryHub) replayLocked(user string, a eventID) []Event {
	at := func(i int) *keptEv { return &h.ring[(h.head+i)%len(h.ring)] }
	first := sort.Search(h.n, func(i int) bool { return at(i).id.compare(a) > 0 })
	var out []Event
	for i := first; i < h.n; i++ {
		if k := at(i); k.ev.To == user || k.ev.To == everyone {
			out = append(out, k.ev)
		}
	}
	return out
}
