// This file reads and writes the cursor of the list of API keys:
// page.Cursor's wire form, and the 422 of one this API did not give.
package account

import (
	"net/http"
	"regexp"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/page"
)

// A cursor is opaque to clients: they send back the next_cursor a page
// gave them. Inside it is page.Encode's "<created_at in Unix ms>.<id>" of
// the last item of that page; lists are ordered newest first, then by id,
// so that pair is a place in the list that later inserts and deletes do
// not move. With a key's 32-hex-digit id it is at most 70 characters; the
// spec allows 128.

var cursorID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// encodeCursor returns the next_cursor for c; "" for the zero Cursor (no
// next page).
func encodeCursor(c auth.Cursor) string { return page.Encode(c) }

// decodeCursor reads a cursor parameter of the API keys; "" is the start
// of the list, and one this API did not issue is page.ErrBad.
func decodeCursor(s string) (auth.Cursor, error) { return page.Decode(s, cursorID.MatchString) }

// badCursor is the 422 for a cursor decodeCursor refused.
func badCursor() *api.Error {
	return api.NewError(http.StatusUnprocessableEntity, "the cursor is not one this list gave out: start again without it",
		api.FieldError{Location: "query.cursor", Message: "not a cursor of this list"})
}
