package main

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-template/brain/store"
)

// BRAIN_MAX_SESSIONS, BRAIN_MAX_API_KEYS and BRAIN_STORE_TIMEOUT reach the
// running server.
func TestCapsAndStoreTimeoutFromSettings(t *testing.T) {
	dir := t.TempDir()
	base, _ := MustRunServer(t, map[string]string{"BRAIN_DATA_DIR": dir, "BRAIN_ADMIN_PASSWORD": adminPassword,
		"BRAIN_MAX_SESSIONS": "1", "BRAIN_MAX_API_KEYS": "2", "BRAIN_STORE_TIMEOUT": "2s"})
	c := client{t, base}

	first, _ := sessionCookieOf(t, login(c, "admin", adminPassword).want(t, 200, "first login"))
	c.do("GET", "/api/v1/auth/me", nil, first).want(t, 200, "the first session")
	second, _ := sessionCookieOf(t, login(c, "admin", adminPassword).want(t, 200, "second login"))
	c.do("GET", "/api/v1/auth/me", nil, first).want(t, 401, "the first session, beyond a cap of 1")
	c.do("GET", "/api/v1/auth/me", nil, second).want(t, 200, "the second session")

	for range 2 {
		c.do("POST", "/api/v1/apikeys", map[string]string{"name": "k"}, second).want(t, 201, "a key under the cap")
	}
	if res := c.do("POST", "/api/v1/apikeys", map[string]string{"name": "k"}, second).want(t, 409, "a third key with a cap of 2"); res.str("code") != "conflict" {
		t.Errorf("409 body = %s", res.raw)
	}

	// Another connection holds SQLite's write lock: a login (which writes
	// its session) fails after the 2 s store timeout, not after SQLite's
	// 10 s busy timeout. A login's own time (its password hash, slow under
	// -race on a busy machine) is measured first and allowed for; the bound
	// lies between the two timeouts. (2 s leaves the writes before this
	// room on a loaded machine.)
	start := time.Now()
	login(c, "admin", adminPassword).want(t, 200, "a login without the lock")
	normal := time.Since(start)
	raw, err := sql.Open("sqlite", "file:"+filepath.ToSlash(store.SQLitePath(dir))+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start = time.Now()
	res := login(c, "admin", adminPassword)
	if took := time.Since(start); res.status < 500 || res.str("code") == "" || took > normal+8*time.Second {
		t.Fatalf("login under a held write lock: %d %s after %v (a login takes %v); "+
			"want an error envelope after the 2 s store timeout, before the 10 s busy timeout", res.status, res.raw, took, normal)
	}
}
