package api

import (
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/auth"
)

// A cursor is opaque to clients: they send back the next_cursor a page
// gave them. Inside it is the base64url (no padding) of
// "<created_at in Unix ms>.<id>" of the last item of that page; lists are
// ordered newest first, then by id, so that pair is a place in the list
// that later inserts and deletes do not move. It is at most 70 characters;
// the spec allows 128.

var cursorID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// errBadCursor is a cursor this API did not issue. It says nothing of the
// value, which is the client's.
var errBadCursor = errors.New("api: not a cursor of this list")

// encodeCursor returns the next_cursor for c; "" for the zero Cursor (no
// next page).
func encodeCursor(c auth.Cursor) string {
	if c == (auth.Cursor{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + "." + c.ID))
}

// decodeCursor reads a cursor parameter; "" is the start of the list.
func decodeCursor(s string) (auth.Cursor, error) {
	if s == "" {
		return auth.Cursor{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return auth.Cursor{}, errBadCursor
	}
	msText, id, ok := strings.Cut(string(b), ".")
	ms, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil || ms <= 0 || !cursorID.MatchString(id) {
		return auth.Cursor{}, errBadCursor
	}
	return auth.Cursor{CreatedAt: time.UnixMilli(ms).UTC(), ID: id}, nil
}

// badCursor is the 422 for a cursor decodeCursor refused.
func badCursor() *Error {
	return NewError(http.StatusUnprocessableEntity, "the cursor is not one this list gave out: start again without it",
		FieldError{Location: "query.cursor", Message: "not a cursor of this list"})
}
