// Package page is the cursor of the lists ordered newest first (API keys, a
// feature's rows); store.PageAfter is its SQL.
package page

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A Cursor is the created time and id of the last item a page showed
// (created_at descending, then id); the zero Cursor is the start of the list.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ErrBad is a cursor string this list did not give out.
var ErrBad = errors.New("not a cursor of this list")

// Encode returns c opaque, the base64url of "<Unix ms>.<id>"; "" for the zero Cursor.
func Encode(c Cursor) string {
	if c == (Cursor{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + "." + c.ID))
}

// Decode reads what [Encode] wrote, whose id validID accepts, else [ErrBad].
func Decode(s string, validID func(id string) bool) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrBad
	}
	msText, id, ok := strings.Cut(string(b), ".")
	ms, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil || ms <= 0 || !validID(id) {
		return Cursor{}, ErrBad
	}
	return Cursor{CreatedAt: time.UnixMilli(ms).UTC(), ID: id}, nil
}

// Cut ends a page fetched with limit+1 items: the first limit items and, when
// there were more, the Cursor of the last of them.
func Cut[T any](items []T, limit int, place func(T) Cursor) ([]T, Cursor) {
	if len(items) <= limit {
		return items, Cursor{}
	}
	items = items[:limit]
	return items, place(items[limit-1])
}
