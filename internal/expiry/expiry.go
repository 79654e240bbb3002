// Package expiry is a bounded set of keys that each expire at a time of
// their own: the caches of "refused until" and "unknown until" that must
// not grow without bound under a flood of new keys.
package expiry

import "time"

// A Set remembers keys, each until a time, and holds at most Max of them:
// adding to a full Set drops the expired keys and, if it is still full, an
// arbitrary tenth, so that the next adds are cheap. The zero Set of a
// given Max is ready to use. It is not safe for concurrent use: its owner
// locks it.
type Set[K comparable] struct {
	Max   int
	until map[K]time.Time
}

// Add remembers k until until; now is the time of the add.
func (s *Set[K]) Add(k K, until, now time.Time) {
	if s.until == nil {
		s.until = map[K]time.Time{}
	}
	if len(s.until) >= s.Max {
		s.drop(now)
	}
	s.until[k] = until
}

// drop deletes the keys expired at now and, while more than nine tenths
// of Max remain, arbitrary others (map order).
func (s *Set[K]) drop(now time.Time) {
	for k, t := range s.until {
		if !now.Before(t) {
			delete(s.until, k)
		}
	}
	for k := range s.until {
		if len(s.until) < s.Max*9/10 {
			break
		}
		delete(s.until, k)
	}
}

// Has reports whether k is remembered and not expired at now. An expired
// k is forgotten.
func (s *Set[K]) Has(k K, now time.Time) bool {
	t, ok := s.until[k]
	if ok && !now.Before(t) {
		delete(s.until, k)
		return false
	}
	return ok
}

// Len is how many keys the Set holds, expired ones it has not dropped
// yet included.
func (s *Set[K]) Len() int { return len(s.until) }
