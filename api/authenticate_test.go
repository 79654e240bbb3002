package api

import (
	"net/http"
	"strings"
	"testing"
)

// sessionToken finds what r.Cookie(SessionCookie) finds, whatever the
// request sends: the first valid cookie of the name, past quoted,
// spaced, empty and malformed ones.
func FuzzSessionToken(f *testing.F) {
	for _, h := range []string{
		"",
		SessionCookie + "=abc",
		"theme=dark; " + SessionCookie + "=tok_1-2.3",
		SessionCookie + `="quoted"`,
		SessionCookie + "=bad value; " + SessionCookie + "=good",
		SessionCookie + "=; other=1",
		" " + SessionCookie + " = spaced ",
		SessionCookie + "=\u00a0x; " + SessionCookie + "=y",
		SessionCookie + "=a,b; " + SessionCookie + "=c",
		"x" + SessionCookie + "=no",
		";;" + SessionCookie + "=\tt\t;",
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if strings.Count(h, ";") > 1000 { // r.Cookie gives up past 3,000 cookies
			return
		}
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = []string{h}
		got, ok := sessionToken(r)
		c, err := r.Cookie(SessionCookie)
		if want := err == nil; ok != want || want && got != c.Value {
			t.Fatalf("Cookie: %q: sessionToken = %q, %v; r.Cookie = %v, %v", h, got, ok, c, err)
		}
	})
}
