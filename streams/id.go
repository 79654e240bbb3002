package streams

import (
	"cmp"
	"strconv"
	"strings"
)

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
