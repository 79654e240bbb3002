package ingest

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/gowebpki/jcs"
)

// Key returns the idempotency key of an ingest request's body, raw exactly
// as received: the ingest_id it names and the fingerprint of its content.
//
// Both are hashes of the body's canonical form (RFC 8785, JSON
// Canonicalization Scheme): its members sorted, no insignificant white
// space, numbers and strings written one way. Two bodies that mean the
// same JSON have the same canonical form, however they were spaced,
// ordered or escaped.
//
//   - The fingerprint is the SHA-256, in lowercase hex, of the canonical
//     form of the body without its ingest_id member.
//   - The ingest_id is the body's ingest_id member, 64 lowercase hex
//     digits, when it has one; otherwise it is the SHA-256 of the
//     canonical form of the whole body, which is then the fingerprint.
//
// Key checks only what the key needs: that raw is one JSON object with no
// duplicate member names, in valid UTF-8, and that its ingest_id, if
// any, is well-formed. Otherwise it returns a [*ValidationError]. The
// rest of the body is [Parse]'s to check.
func Key(raw []byte) (ingestID, fingerprint string, err error) {
	canon, err := jcs.Transform(raw)
	if err != nil {
		return "", "", invalid("body", "is not valid JSON ("+err.Error()+")")
	}
	if len(canon) == 0 || canon[0] != '{' {
		return "", "", invalid("body", "must be a JSON object")
	}
	value, rest, found := cutMember(canon, `"ingest_id"`)
	if !found {
		sum := sha256.Sum256(canon)
		id := hex.EncodeToString(sum[:])
		return id, id, nil
	}
	if !isIngestID(value) {
		return "", "", invalid("body.ingest_id", ingestIDRule)
	}
	sum := sha256.Sum256(rest)
	return string(value[1 : len(value)-1]), hex.EncodeToString(sum[:]), nil
}

// ingestIDRule is what a well-formed ingest_id is, as a message.
const ingestIDRule = "must be 64 lowercase hex digits (a SHA-256); leave it out to have one derived from the body"

// isIngestID reports whether v, a canonical JSON value, is a string of 64
// lowercase hex digits. (A canonical string writes those digits as they
// are, never escaped.)
func isIngestID(v []byte) bool {
	if len(v) != 66 || v[0] != '"' || v[65] != '"' {
		return false
	}
	return isHex64(string(v[1:65]))
}

// isHex64 reports whether s is 64 lowercase hex digits.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// cutMember finds the member of the top-level object canon whose name,
// quoted as canonical JSON writes it, is name. It returns the member's
// value and canon without the member (and the comma that separated it),
// which is the canonical form of the object without that member: members
// of a canonical object are written independently of each other, in an
// order that removing one does not change.
//
// canon must be canonical JSON of an object (what jcs.Transform returns).
// Its strings escape only '"', '\\' and control characters, all with a
// backslash, and it has no white space between tokens: a member's end is
// found by counting brackets outside strings.
func cutMember(canon []byte, name string) (value, rest []byte, found bool) {
	i := 1 // after '{'
	for i < len(canon) && canon[i] != '}' {
		start := i
		keyEnd := skipString(canon, i) + 1 // after the closing quote
		valueStart := keyEnd + 1           // after ':'
		end := skipValue(canon, valueStart)
		if string(canon[start:keyEnd]) == name {
			value = canon[valueStart:end]
			switch {
			case canon[end] == ',': // not the last member: drop its comma
				end++
			case start > 1: // the last of several: drop the comma before it
				start--
			}
			rest = make([]byte, 0, len(canon)-(end-start))
			rest = append(append(rest, canon[:start]...), canon[end:]...)
			return value, rest, true
		}
		i = end
		if canon[i] == ',' {
			i++
		}
	}
	return nil, canon, false
}

// skipString returns the index of the quote that closes the string whose
// opening quote is at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++ // the escaped byte cannot close the string
		}
	}
	return i
}

// skipValue returns the index just past the canonical JSON value that
// starts at b[i]: of the ',' or '}' that follows it in its object.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
