package streams

import (
	"cmp"
	"context"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MemoryHub is a [Hub] for one process, safe for concurrent use. It keeps
// the newest events of all users in a ring for replay; ids take Redis's
// form and strictly increase, even when the clock goes back.
type MemoryHub struct {
	// Now is the clock of event ids (time.Now); set it before use.
	Now func() time.Time

	fanout          // its lock guards the fields below too
	ring   []keptEv // the newest events, oldest at head; len is the hub's replay
	head   int
	n      int // events in ring

	last  eventID // the newest id given; 0-0 before any
	floor eventID // every event after floor is in ring: the newest dropped, else the first
}

type keptEv struct {
	id eventID
	ev Event
}

// NewMemoryHub returns a hub that keeps the newest replay events and
// buffers up to buffer events per subscription before it ends a subscriber
// that does not read them. It panics unless replay >= 0 and buffer >= 1.
func NewMemoryHub(replay, buffer int) *MemoryHub {
	if replay < 0 {
		panic("streams: a hub cannot keep fewer than 0 events")
	}
	h := &MemoryHub{Now: time.Now, ring: make([]keptEv, replay)}
	h.init(buffer)
	return h
}

// Publish gives ev an id, keeps it and sends it to ev.To's subscriptions;
// it never waits nor fails. Do not change ev.Data afterwards.
func (h *MemoryHub) Publish(_ context.Context, ev Event) (string, error) {
	now := h.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.nextLocked(now)
	ev.ID = id.String()
	h.keepLocked(keptEv{id, ev})
	h.deliverLocked(ev, id)
	return ev.ID, nil
}

// Subscribe follows user's events; it registers the subscription and reads
// its Replay in one step, so no event is in both. Gap is set when the ring
// dropped an event after after, or after is not one of the hub's ids.
func (h *MemoryHub) Subscribe(_ context.Context, user, after string) (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.addLocked(user, eventID{})
	s.At = h.last.String()
	if after == "" {
		return s, nil
	}
	a, ok := parseID(after)
	if !ok || h.last == (eventID{}) || a.compare(h.floor) < 0 || a.compare(h.last) > 0 {
		s.Gap = true
	}
	if ok {
		s.Replay = h.replayLocked(user, a)
	}
	return s, nil
}

// nextLocked returns the id of an event published at now: after the last, never 0-0.
func (h *MemoryHub) nextLocked(now time.Time) eventID {
	id := eventID{ms: uint64(max(now.UnixMilli(), 0))}
	if id.compare(h.last) <= 0 { // the same ms, the clock gone back, or 0-0 (no id in Redis)
		id = eventID{h.last.ms, h.last.seq + 1}
	}
	if h.last == (eventID{}) {
		h.floor = id
	}
	h.last = id
	return id
}

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

// An eventID is an [Event.ID] read as its Unix millisecond and sequence.
type eventID struct{ ms, seq uint64 }

const maxIDLen = 41 // two 20-digit numbers and a dash

// parseID reads an id "<ms>-<seq>", decimal uint64s without sign or
// leading zeros (so equal ids have equal strings).
func parseID(id string) (eventID, bool) {
	ms, seq, ok := strings.Cut(id, "-")
	a, okA := parseUint(ms)
	b, okB := parseUint(seq)
	if !ok || !okA || !okB || len(id) > maxIDLen {
		return eventID{}, false
	}
	return eventID{a, b}, true
}

func parseUint(s string) (uint64, bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func (id eventID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

func (id eventID) compare(o eventID) int {
	return cmp.Or(cmp.Compare(id.ms, o.ms), cmp.Compare(id.seq, o.seq))
}
