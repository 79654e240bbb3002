// Package expiry is a bounded set of keys that each expire at a time of their own.
package expiry

import "time"

// A Set remembers at most Max keys, each until a time: adding to a full Set
// drops the expired keys and, if still full, an arbitrary tenth. It is not
// safe for concurrent use.
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

// Has reports whether k is remembered and not expired at now.
func (s *Set[K]) Has(k K, now time.Time) bool {
	t, ok := s.until[k]
	if ok && !now.Before(t) {
		delete(s.until, k)
		return false
	}
	return ok
}

// Len is how many keys the Set holds, expired ones not dropped yet included.
func (s *Set[K]) Len() int { return len(s.until) }
