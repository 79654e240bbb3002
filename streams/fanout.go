package streams

import "sync"

// fanout hands each event to its user's subscriptions in this process. Its
// lock is also the hub's, so a subscription registered under it sees every
// event delivered after and none before. A send that would block ends that
// subscription with errSlow.
type fanout struct {
	mu     sync.Mutex
	buffer int
	subs   map[string][]*Subscription // by user
	probed []func(user string)        // called with the user of each probe
}

func (f *fanout) init(buffer int) {
	if buffer < 1 {
		panic("streams: a hub's buffer must hold at least one event")
	}
	f.buffer = buffer
	f.subs = map[string][]*Subscription{}
}

// addLocked registers a subscription of user that skips events up to skip.
func (f *fanout) addLocked(user string, skip eventID) *Subscription {
	s := &Subscription{user: user, skip: skip, events: make(chan *Event, f.buffer), done: make(chan struct{})}
	s.cancel = func() { f.remove(s) }
	f.subs[user] = append(f.subs[user], s)
	return s
}

// deliverLocked sends ev to the subscriptions of ev.To, or to the probed
// functions when it is a probe.
func (f *fanout) deliverLocked(ev Event, id eventID) {
	if ev.Type == probeEvent { // a probe, of the user in its data
		for _, probed := range f.probed {
			probed(string(ev.Data))
		}
		return
	}
	if ev.To != everyone {
		f.deliverToLocked(ev.To, ev, id)
		return
	}
	for user := range f.subs { // deliverToLocked may delete user's entry: allowed while ranging
		f.deliverToLocked(user, ev, id)
	}
}

func (f *fanout) deliverToLocked(user string, ev Event, id eventID) {
	subs := f.subs[user]
	if len(subs) == 0 {
		return
	}
	shared := &ev // one copy, read by every subscriber: a buffered event costs each a pointer
	for i := 0; i < len(subs); {
		s := subs[i]
		if id.compare(s.skip) <= 0 {
			i++
			continue
		}
		select {
		case s.events <- shared:
			i++
		default:
			subs = f.dropLocked(user, subs, i, errSlow)
		}
	}
}

// remove removes s and ends it, unless f has ended it already.
func (f *fanout) remove(s *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.subs[s.user]
	for i, t := range subs {
		if t == s {
			f.dropLocked(s.user, subs, i, nil)
			return
		}
	}
}

// dropLocked removes and ends subs[i] of user's, returning those left.
func (f *fanout) dropLocked(user string, subs []*Subscription, i int, err error) []*Subscription {
	s := subs[i]
	last := len(subs) - 1
	subs[i] = subs[last]
	subs[last] = nil
	subs = subs[:last]
	if len(subs) == 0 {
		delete(f.subs, user)
	} else {
		f.subs[user] = subs
	}
	s.end(err)
	return subs
}
