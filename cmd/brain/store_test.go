package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

func TestUserAddAndMigrate(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			kv := map[string]string{"BRAIN_DATA_DIR": t.TempDir(), "BRAIN_DATABASE_URL": storetest.URL(t, d)}
			ctx := context.Background()
			var out bytes.Buffer
			if err := run(ctx, []string{"migrate"}, env(kv), nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "schema at version") {
				t.Fatalf("migrate: %v %q", err, out.String())
			}
			out.Reset()
			err := run(ctx, []string{"user", "add", "--username", "Grace"}, env(kv), strings.NewReader("a long enough password\n"), &out, io.Discard)
			if err != nil || !strings.Contains(out.String(), "created user grace") {
				t.Fatalf("user add: %v %q", err, out.String())
			}
			err = run(ctx, []string{"user", "add", "--username", "grace"}, env(kv), strings.NewReader("another long password\n"), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "exists already") {
				t.Fatalf("adding grace twice: %v", err)
			}
			if err := run(ctx, []string{"user", "add", "--username", "bob"}, env(kv), strings.NewReader("short\n"), io.Discard, io.Discard); err == nil {
				t.Fatal("a short password was accepted")
			}
			// The server starts on that database and grace can log in;
			// no admin is created, since a user exists.
			base, logs := MustRunServer(t, kv)
			c := client{t, base}
			res := login(c, "grace", "a long enough password").want(t, 200, "grace logs in")
			cookie, _ := sessionCookieOf(t, res)
			// Bytes PostgreSQL cannot store are a client's mistake, not a 500.
			login(c, "grace\u0000", "a long enough password").want(t, 401, "a NUL in a username")
			c.do("POST", "/api/v1/apikeys", map[string]string{"name": "a\u0000b"}, cookie).want(t, 422, "a NUL in a key name")
			c.do("DELETE", "/api/v1/apikeys/a%00b", nil, cookie).want(t, 422, "a NUL in a key id")
			if strings.Contains(logs.String(), "created user admin") {
				t.Error("an admin was created though a user exists")
			}
		})
	}
}

func TestFirstStartCreatesAdminWithRandomPassword(t *testing.T) {
	base, logs := MustRunServer(t, nil)
	var pw string
	for _, line := range strings.Split(logs.String(), "\n") {
		if i := strings.Index(line, " password="); i >= 0 && strings.Contains(line, "created user admin") {
			pw = strings.Fields(line[i+len(" password="):])[0]
		}
	}
	if len(pw) < 12 {
		t.Fatalf("no random admin password in the log:\n%s", logs)
	}
	login(client{t, base}, "admin", pw).want(t, 200, "admin with the logged password")
}

func TestNewerSchemaStopsStart(t *testing.T) {
	dir := t.TempDir()
	kv := map[string]string{"BRAIN_DATA_DIR": dir}
	if err := run(context.Background(), []string{"migrate"}, env(kv), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenSQLite(context.Background(), store.SQLitePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = run(context.Background(), nil, env(kv), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "version 999") {
		t.Fatalf("start on a newer schema: %v, want a clear refusal", err)
	}
}
