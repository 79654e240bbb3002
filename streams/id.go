package streams

import (
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
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64) // only overflow is left to refuse
	return n, err == nil
}

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
