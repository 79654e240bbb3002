package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// client speaks JSON to a running server.
type client struct {
	t    *testing.T
	base string
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends method path with body (JSON-encoded unless nil) and headers as
// "Name: value" strings.
func (c client) do(method, path string, body any, headers ...string) response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (r response) want(t *testing.T, status int, what string) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.raw)
	}
	return r
}

func (r response) str(keys ...string) string {
	var cur any = r.body
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

const adminPassword = "admin password 123"

func login(c client, user, password string) response {
	return c.do("POST", "/api/v1/auth/login", map[string]string{"username": user, "password": password})
}

func sessionCookieOf(t *testing.T, r response) (cookie, header string) {
	t.Helper()
	for _, sc := range r.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "brain_session=") {
			v, _, _ := strings.Cut(strings.TrimPrefix(sc, "brain_session="), ";")
			return "Cookie: brain_session=" + v, sc
		}
	}
	t.Fatalf("no brain_session cookie in %v", r.header.Values("Set-Cookie"))
	return "", ""
}

func TestAuthOverHTTP(t *testing.T) {
	dataDir := t.TempDir()
	env := map[string]string{"BRAIN_DATA_DIR": dataDir, "BRAIN_ADMIN_PASSWORD": adminPassword}
	base, _, stop := runServer(t, env)
	c := client{t, base}

	res := login(c, "admin", adminPassword).want(t, 200, "login")
	cookie, setCookie := sessionCookieOf(t, res)
	for _, flag := range []string{"HttpOnly", "SameSite=Lax", "Path=/", "Secure", "Max-Age="} {
		if !strings.Contains(setCookie, flag) {
			t.Errorf("Set-Cookie %q lacks %s", setCookie, flag)
		}
	}
	if res.str("user", "username") != "admin" || res.str("expires_at") == "" {
		t.Errorf("login body = %s", res.raw)
	}

	if me := c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 200, "me with cookie"); me.str("auth") != "session" {
		t.Errorf("me with cookie: auth = %q", me.str("auth"))
	}
	c.do("GET", "/api/v1/auth/me", nil).want(t, 401, "me without credentials")

	created := c.do("POST", "/api/v1/apikeys", map[string]string{"name": "laptop"}, cookie).want(t, 201, "create key")
	key := created.str("key")
	if !strings.HasPrefix(key, "brk_") || !strings.HasPrefix(key, created.str("prefix")) {
		t.Fatalf("created key = %s", created.raw)
	}
	for _, h := range []string{"Authorization: Bearer " + key, "X-API-Key: " + key} {
		if me := c.do("GET", "/api/v1/auth/me", nil, h).want(t, 200, "me with "+h[:12]); me.str("auth") != "apikey" || me.str("user", "username") != "admin" {
			t.Errorf("me with %s: %s", h[:12], me.raw)
		}
	}
	c.do("POST", "/api/v1/apikeys", map[string]string{"name": "minted"}, "X-API-Key: "+key).want(t, 403, "a key minting a key")
	list := c.do("GET", "/api/v1/apikeys", nil, cookie).want(t, 200, "list keys")
	if strings.Contains(list.raw, key) || !strings.Contains(list.raw, created.str("id")) {
		t.Fatalf("list shows the secret or lacks the key: %s", list.raw)
	}

	t.Run("CSRF", func(t *testing.T) {
		c.do("POST", "/api/v1/apikeys", map[string]string{"name": "x"}, cookie, "Sec-Fetch-Site: cross-site").want(t, 403, "cross-site cookie POST")
		c.do("POST", "/api/v1/apikeys", map[string]string{"name": "x"}, cookie, "Origin: https://evil.example").want(t, 403, "foreign-origin cookie POST")
		c.do("POST", "/api/v1/apikeys", map[string]string{"name": "x"}, cookie, "Sec-Fetch-Site: same-origin").want(t, 201, "same-origin cookie POST")
		c.do("GET", "/api/v1/auth/me", nil, cookie, "Sec-Fetch-Site: cross-site").want(t, 200, "cross-site GET (safe)")
		c.do("POST", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPassword}, "Sec-Fetch-Site: cross-site").want(t, 403, "cross-site login (login CSRF)")
		c.do("GET", "/api/v1/auth/me", nil, "X-API-Key: "+key, "Sec-Fetch-Site: cross-site", "Origin: https://evil.example").want(t, 200, "API key from anywhere")
	})

	// A restart keeps users, keys and sessions.
	stop()
	base2, _, _ := runServer(t, env)
	c = client{t, base2}
	c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 200, "the session after a restart")
	c.do("GET", "/api/v1/auth/me", nil, "X-API-Key: "+key).want(t, 200, "the key after a restart")

	c.do("DELETE", "/api/v1/apikeys/"+created.str("id"), nil, cookie).want(t, 204, "delete key")
	c.do("GET", "/api/v1/auth/me", nil, "X-API-Key: "+key).want(t, 401, "a deleted key")
	c.do("DELETE", "/api/v1/apikeys/"+created.str("id"), nil, cookie).want(t, 404, "delete it again")

	out := c.do("POST", "/api/v1/auth/logout", nil, cookie).want(t, 204, "logout")
	if _, sc := sessionCookieOf(t, out); !strings.Contains(sc, "Max-Age=0") {
		t.Errorf("logout should clear the cookie: %q", sc)
	}
	c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 401, "a logged-out session")
}

func TestLoginThrottleOverHTTP(t *testing.T) {
	base, _ := MustRunServer(t, map[string]string{"BRAIN_ADMIN_PASSWORD": adminPassword})
	c := client{t, base}

	wrong := login(c, "admin", "not the password").want(t, 401, "wrong password")
	unknown := login(c, "nobody", "not the password").want(t, 401, "unknown user")
	if wrong.raw != unknown.raw {
		t.Errorf("wrong password and unknown user answer differently:\n%s\n%s", wrong.raw, unknown.raw)
	}
	for i := 2; i <= 5; i++ {
		login(c, "admin", "not the password").want(t, 401, fmt.Sprintf("wrong password #%d", i))
	}
	sixth := login(c, "admin", "not the password").want(t, 429, "the 6th wrong password")
	ra, err := strconv.Atoi(sixth.header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Fatalf("Retry-After = %q, want whole seconds >= 1", sixth.header.Get("Retry-After"))
	}
	if sixth.str("code") != "rate-limited" || sixth.body["details"].(map[string]any)["scope"] != "login" ||
		sixth.body["details"].(map[string]any)["retry_after_s"] != float64(ra) {
		t.Fatalf("429 body = %s", sixth.raw)
	}
	// Even the right password waits: the back-off does not tell.
	login(c, "admin", adminPassword).want(t, 429, "the right password during the back-off")
}

// A client that is not a trusted proxy cannot pick the address the login
// throttle keys on by sending X-Forwarded-For.
func TestSpoofedForwardedForChangesNothing(t *testing.T) {
	base, _ := MustRunServer(t, nil) // no trusted proxies
	c := client{t, base}
	for i := range 20 { // each from a different claimed address
		c.do("POST", "/api/v1/auth/login", map[string]string{"username": fmt.Sprintf("user%d", i), "password": "not the password"},
			fmt.Sprintf("X-Forwarded-For: 203.0.113.%d", i)).want(t, 401, "failure")
	}
	res := c.do("POST", "/api/v1/auth/login", map[string]string{"username": "fresh", "password": "not the password"},
		"X-Forwarded-For: 198.51.100.77", "X-Real-IP: 198.51.100.78", "True-Client-IP: 198.51.100.79")
	res.want(t, 429, "the 21st failure from one address, whatever X-Forwarded-For says")
}
