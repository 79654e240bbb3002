package streams

import (
	"strconv"
	"strings"
)

// An eventID is an [Event.ID] read as its two numbers: the Unix
// millisecond it was given in, and its sequence within that millisecond.
// Ids order by ms, then seq, as Redis orders the ids of a stream.
type eventID struct{ ms, seq uint64 }

// maxIDLen is the length of the longest id: two 20-digit numbers (the
// most a uint64 takes) and the dash. Longer input is not an id, and is
// rejected before it is read any further.
const maxIDLen = 41

// parseID reads id in the form the hubs give: "<ms>-<seq>", both decimal
// numbers without sign or leading zeros, each at most a uint64. Anything
// else (a client's Last-Event-ID is arbitrary input) reports false.
// Leading zeros are refused so that two ids are equal only when their
// strings are.
func parseID(id string) (eventID, bool) {
	if len(id) > maxIDLen {
		return eventID{}, false
	}
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return eventID{}, false
	}
	a, ok := parseUint(ms)
	if !ok {
		return eventID{}, false
	}
	b, ok := parseUint(seq)
	if !ok {
		return eventID{}, false
	}
	return eventID{a, b}, true
}

// parseUint reads a decimal uint64 of digits only, without leading zeros.
func parseUint(s string) (uint64, bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64) // only overflow is left to refuse
	return n, err == nil
}

// String returns the id as "<ms>-<seq>".
func (id eventID) String() string {
	var b [maxIDLen]byte
	s := strconv.AppendUint(b[:0], id.ms, 10)
	s = append(s, '-')
	return string(strconv.AppendUint(s, id.seq, 10))
}

// compare returns -1, 0 or +1 as id is before, equal to or after o.
func (id eventID) compare(o eventID) int {
	switch {
	case id.ms < o.ms:
		return -1
	case id.ms > o.ms:
		return 1
	case id.seq < o.seq:
		return -1
	case id.seq > o.seq:
		return 1
	}
	return 0
}
