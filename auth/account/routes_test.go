// The account operations over real HTTP, on the whole server: what they
// check of their inputs, the cookie they set, the pages of keys, and the
// key events.

package account_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// withClock returns an auth service on db with the user ada, whose time
// is clk's: the server's and the service's clocks are then one.
func withClock(tb testing.TB, db *store.DB, clk *apitest.Clock) *auth.Service {
	tb.Helper()
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: apitest.Argon2, Now: clk.Now})
	if _, err := svc.AddUser(context.Background(), apitest.User, apitest.Password); err != nil {
		tb.Fatal(err)
	}
	return svc
}

// A key's name is shown to people: names that are blank, or carry control
// characters or invisible reordering marks, are refused with a 422 at
// body.name.
func TestKeyNamesAreDisplayable(t *testing.T) {
	s := apitest.Start(t, api.Config{})
	session := s.Session()
	for _, name := range []string{"\u009b31m", "\u0085", "\u202eevil", "a\u2028b", "     ", "\u2066x"} {
		r := s.Call("POST", "/api/v1/apikeys", map[string]string{"name": name}, session)
		if r.Status != http.StatusUnprocessableEntity || r.Code() != "unprocessable" || !strings.Contains(r.Body, "body.name") {
			t.Errorf("name %q: %d %s, want 422 at body.name", name, r.Status, r.Body)
		}
	}
	s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "Ada's laptop (café)"}, session).Want(t, http.StatusCreated, "a plain name")
}

// A cursor or limit the API did not issue or allow is a 422 envelope that
// does not repeat the value, never a 500.
func TestKeyPagesRefuseBadParameters(t *testing.T) {
	s := apitest.Start(t, api.Config{})
	session := s.Session()
	const marker = "ZZTOPSECRETZZ"
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct{ name, query, location string }{
		{"not_base64url", "cursor=" + marker + "!!", "query.cursor"},
		{"base64_of_junk", "cursor=" + b64(marker), "query.cursor"},
		{"bad_time", "cursor=" + b64("-5."+strings.Repeat("a", 32)), "query.cursor"},
		{"bad_id", "cursor=" + b64("1700000000000."+marker), "query.cursor"},
		{"too_long", "cursor=" + strings.Repeat(marker, 20), "query.cursor"},
		{"limit_zero", "limit=0", "query.limit"},
		{"limit_too_big", "limit=101", "query.limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Call("GET", "/api/v1/apikeys?"+tc.query, nil, session)
			var env apitest.Envelope
			r.Decode(t, &env)
			if r.Status != http.StatusUnprocessableEntity || env.Code != "unprocessable" || len(env.Details.Errors) == 0 || env.Details.Errors[0].Location != tc.location {
				t.Fatalf("%s: %d %s; want 422 unprocessable at %s", tc.query, r.Status, r.Body, tc.location)
			}
			if strings.Contains(r.Body, marker) || strings.Contains(r.Body, b64(marker)) {
				t.Fatalf("the error repeats the parameter: %s", r.Body)
			}
		})
	}
}

// Seven keys in pages of three: 3, 3, 1, each key once, in order, though
// four of them share a millisecond and a page ends among those four.
func TestKeyPages(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		clk := apitest.NewClock(t0)
		s := apitest.Start(t, api.Config{Auth: withClock(t, db, clk), Now: clk.Now})
		session := s.Session()
		var created []string // oldest first
		for i := range 7 {
			if i < 4 {
				clk.Advance(time.Millisecond) // keys 3..6 share the last millisecond
			}
			var k struct{ ID string }
			s.Call("POST", "/api/v1/apikeys", map[string]string{"name": fmt.Sprintf("key %d", i)}, session).Want(t, http.StatusCreated, "create").Decode(t, &k)
			created = append(created, k.ID)
		}
		// Newest first; within a millisecond, by id.
		want := slices.Clone(created[3:])
		slices.Sort(want)
		want = append(want, created[2], created[1], created[0])

		var got []string
		var sizes []int
		cursor := ""
		for range 10 {
			var page struct {
				Keys       []struct{ ID string }
				NextCursor *string `json:"next_cursor"`
			}
			s.Call("GET", "/api/v1/apikeys?limit=3&cursor="+cursor, nil, session).Want(t, http.StatusOK, fmt.Sprintf("page %d", len(sizes)+1)).Decode(t, &page)
			sizes = append(sizes, len(page.Keys))
			for _, k := range page.Keys {
				got = append(got, k.ID)
			}
			if page.NextCursor == nil {
				break
			}
			if *page.NextCursor == "" {
				t.Fatal(`next_cursor is "", want it absent on the last page and set on the others`)
			}
			cursor = *page.NextCursor
		}
		if !slices.Equal(sizes, []int{3, 3, 1}) || !slices.Equal(got, want) {
			t.Fatalf("pages of %v keys %v; want pages of [3 3 1] keys %v", sizes, got, want)
		}
	})
}

// The session cookie is HttpOnly, SameSite=Lax, for every path, and
// lives as long as the session on the server's clock; logging out clears
// it. Without Config.CookieSecure it is not Secure.
func TestSessionCookie(t *testing.T) {
	db, clk := apitest.OpenDB(t), apitest.NewClock(t0)
	s := apitest.Start(t, api.Config{Auth: withClock(t, db, clk), Now: clk.Now})
	login := s.Login(apitest.User, apitest.Password).Want(t, http.StatusOK, "login")
	c := sessionCookie(t, login.Header)
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.Value == "" {
		t.Fatalf("cookie %q: want HttpOnly, SameSite=Lax, Path=/, not Secure, with a value", login.Header.Get("Set-Cookie"))
	}
	if want := int(auth.DefaultSessionLifetime / time.Second); c.MaxAge != want || !c.Expires.Equal(t0.Add(auth.DefaultSessionLifetime)) {
		t.Fatalf("cookie Max-Age %d, Expires %v; want %d s, to %v: the session's lifetime", c.MaxAge, c.Expires, want, t0.Add(auth.DefaultSessionLifetime))
	}
	if got := login.Header.Get("Cache-Control"); got != "no-store" {
		t.Fatalf("login's Cache-Control = %q, want no-store", got)
	}
	cookie := login.Cookie(t)
	out := s.Call("POST", "/api/v1/auth/logout", nil, cookie).Want(t, http.StatusNoContent, "logout")
	if c := sessionCookie(t, out.Header); c.Value != "" || c.MaxAge >= 0 {
		t.Fatalf("logout's cookie %q: want it cleared (Max-Age=0)", out.Header.Get("Set-Cookie"))
	}
	s.Call("GET", "/api/v1/auth/me", nil, cookie).Want(t, http.StatusUnauthorized, "the session after logout")
}

// Config.CookieSecure makes the cookie Secure, on a server built without
// the harness (which wires the operations with the zero Config).
func TestSessionCookieSecure(t *testing.T) {
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	srv := httptest.NewServer(api.New(api.Config{Auth: svc, Logger: slog.New(slog.DiscardHandler),
		Features: []api.Feature{account.Feature(svc, account.Config{CookieSecure: true})}}))
	t.Cleanup(srv.Close)
	body := fmt.Sprintf(`{"username":%q,"password":%q}`, apitest.User, apitest.Password)
	r, err := apitest.Exchange(context.Background(), srv.Client(), "POST", srv.URL+"/api/v1/auth/login", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Want(t, http.StatusOK, "login")
	if c := sessionCookie(t, r.Header); !c.Secure || !c.HttpOnly {
		t.Fatalf("cookie %q: want Secure and HttpOnly", r.Header.Get("Set-Cookie"))
	}
}

// sessionCookie is the session cookie a response sets.
func sessionCookie(tb testing.TB, h http.Header) *http.Cookie {
	tb.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	tb.Fatalf("no %s cookie in %v", api.SessionCookie, h.Values("Set-Cookie"))
	return nil
}

// Creating and deleting a key each send an event to the user's streams:
// apikey.created with the key as listed (never its secret), then
// apikey.deleted with its id.
func TestKeyEvents(t *testing.T) {
	s := apitest.Start(t, api.Config{})
	session := s.Session()
	st, r := s.OpenStream("/api/v1/events", session)
	if st == nil {
		t.Fatalf("events: %d %s", r.Status, r.Body)
	}
	var k struct{ ID, Key string }
	s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "laptop"}, session).Want(t, http.StatusCreated, "create").Decode(t, &k)
	created := st.NextEvent(t)
	var view struct{ ID, Name string }
	if err := json.Unmarshal([]byte(created.Data), &view); err != nil || created.Event != "apikey.created" || view.ID != k.ID || view.Name != "laptop" {
		t.Fatalf("event %+v, want apikey.created of key %s", created, k.ID)
	}
	if strings.Contains(created.Data, k.Key) || strings.Contains(created.Data, `"key"`) {
		t.Fatalf("apikey.created carries the key's secret: %s", created.Data)
	}
	s.Call("DELETE", "/api/v1/apikeys/"+k.ID, nil, session).Want(t, http.StatusNoContent, "delete")
	if m := st.NextEvent(t); m.Event != "apikey.deleted" || m.Data != `{"id":"`+k.ID+`"}` {
		t.Fatalf("event %+v, want apikey.deleted of key %s", m, k.ID)
	}
}
