package ingest

import "github.com/google/uuid"

// newJobID returns a job's id: a time-ordered (version 7) UUID.
func newJobID() string { return uuid.Must(uuid.NewV7()).String() }

// newItemID returns an item's id: a random (version 4) UUID.
func newItemID() string { return uuid.NewString() }

// isUUID reports whether s has the canonical form of a UUID.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
