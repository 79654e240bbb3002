package ingest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
)

// queryHash identifies a query for its cursors: its terms and project.
func queryHash(terms []string, project string) string {
	sum := sha256.Sum256([]byte(strings.Join(terms, " ") + "\x00" + project))
	return hex.EncodeToString(sum[:4])
}

// encodeSearchCursor returns the cursor after result r of the query hash:
// base64url of "<score's float64 bits in hex>.<item id>.<query hash>".
func encodeSearchCursor(r Result, hash string) string {
	bits := strconv.FormatUint(math.Float64bits(r.Score), 16)
	return base64.RawURLEncoding.EncodeToString([]byte(bits + "." + r.ID + "." + hash))
}

// decodeSearchCursor reads a cursor of the query hash; "" is the start.
func decodeSearchCursor(s, hash string) (searchCursor, error) {
	if s == "" {
		return searchCursor{}, nil
	}
	bad := invalid("query.cursor", "is not a cursor of this query: start again without it")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return searchCursor{}, bad
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 || !isUUID(parts[1]) || parts[2] != hash {
		return searchCursor{}, bad
	}
	bits, err := strconv.ParseUint(parts[0], 16, 64)
	score := math.Float64frombits(bits)
	if err != nil || math.IsNaN(score) || math.IsInf(score, 0) {
		return searchCursor{}, bad
	}
	return searchCursor{Score: score, ID: parts[1]}, nil
}

// A searchCursor is the last result a page showed, in results ordered by
// Score descending, then ID; the zero searchCursor is the start.
type searchCursor struct {
	Score float64
	ID    string
}

// passed reports whether a result of score and id is c or comes before it.
func (c searchCursor) passed(score float64, id string) bool {
	if c == (searchCursor{}) {
		return false
	}
	return score > c.Score || score == c.Score && id <= c.ID
}
