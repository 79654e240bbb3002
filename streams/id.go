package streams

import (
	"cmp"
	"strconv"
	"strings"
)

// An eventID is an [Event.ID] read as its two numbers, the Unix
// millisecond and the sequence within it, which order as Redis orders a
// stream's ids.
type eventID struct{ ms, seq uint64 }

// maxIDLen is the length of the longest id: two 20-digit numbers and a
// dash.
const maxIDLen = 41

// parseID reads an id "<ms>-<seq>", both decimal uint64s without sign or
// leading zeros (so equal ids have equal strings), and reports false for
// anything else: a client's Last-Event-ID is arbitrary input.
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

func parseUint(s string) (uint64, bool) {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// String returns the id as "<ms>-<seq>".
func (id eventID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

// compare returns -1, 0 or +1 as id is before, equal to or after o.
func (id eventID) compare(o eventID) int {
	return cmp.Or(cmp.Compare(id.ms, o.ms), cmp.Compare(id.seq, o.seq))
}
