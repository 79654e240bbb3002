// Package page is the one cursor of the lists ordered newest first (API
// keys, a feature's rows): the place of an item in such a list, its
// wire form, and the cut of a page fetched one item long. store.PageAfter
// is its SQL.
package page

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A Cursor is a place in a list ordered newest first (created_at
// descending, then id ascending): the created time and id of the last item
// a page showed. The next page starts after it; later inserts and deletes
// do not move it. The zero Cursor is the start of the list.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ErrBad is a cursor string this list did not give out. It says nothing
// of the value, which is the client's.
var ErrBad = errors.New("not a cursor of this list")

// Encode returns c as clients see it, opaque: the base64url (no padding)
// of "<created_at in Unix ms>.<id>". It is "" for the zero Cursor (no next
// page).
func Encode(c Cursor) string {
	if c == (Cursor{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + "." + c.ID))
}

// Decode reads what [Encode] wrote, whose id validID accepts; "" is the
// start of the list. Anything else is [ErrBad].
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

// Cut ends a page fetched with a limit of limit+1 (one more tells whether
// a next page exists): it returns the first limit items and, when there
// were more, the Cursor of the last of them, which place gives; else the
// zero Cursor.
func Cut[T any](items []T, limit int, place func(T) Cursor) ([]T, Cursor) {
	if len(items) <= limit {
		return items, Cursor{}
	}
	items = items[:limit]
	return items, place(items[limit-1])
}
