package main

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"path/filepath"
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

// The start-up log says which database brain uses, and never the
// password of its URL, nor the URL's query.
func TestStartLogNamesTheDatabase(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		kv := serveEnv(t, nil)
		_, logs := MustRunServer(t, kv)
		if want := `dialect=sqlite database=` + filepath.Join(kv["BRAIN_DATA_DIR"], "brain.db"); !strings.Contains(logs.String(), want) {
			t.Fatalf("the log lacks %s:\n%s", want, logs)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		u, err := url.Parse(storetest.URL(t, store.Postgres))
		if err != nil {
			t.Fatal(err)
		}
		password, ok := u.User.Password()
		if !ok { // a server that trusts the test user ignores the password
			password = "never-logged-pw"
			u.User = url.UserPassword(u.User.Username(), password)
		}
		_, logs := MustRunServer(t, map[string]string{"BRAIN_DATABASE_URL": u.String()})
		want := "dialect=postgres database=" + u.Host + u.Path + " "
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the log lacks %q:\n%s", want, logs)
		}
		for _, secret := range []string{password, url.QueryEscape(password), "search_path"} {
			if strings.Contains(logs.String(), secret) {
				t.Fatalf("the log shows %q from the database URL:\n%s", secret, logs)
			}
		}
	})
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

// BRAIN_ADMIN_PASSWORD only applies to the first start; later it is
// ignored, and the log says so rather than leaving someone to wonder why
// the password does not work.
func TestAdminPasswordIgnoredOnceUsersExist(t *testing.T) {
	kv := serveEnv(t, nil)
	if err := run(context.Background(), []string{"user", "add", "--username", "grace"}, env(kv), strings.NewReader("a long enough password\n"), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	kv["BRAIN_ADMIN_PASSWORD"] = adminPassword
	_, logs := MustRunServer(t, kv)
	var warning string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "BRAIN_ADMIN_PASSWORD") {
			warning += line
		}
	}
	if !strings.Contains(warning, "level=WARN") || !strings.Contains(warning, "users exist already") || !strings.Contains(warning, "brain user passwd") {
		t.Fatalf("want one WARN line saying BRAIN_ADMIN_PASSWORD was ignored and why:\n%s", logs)
	}
	if strings.Contains(logs.String(), adminPassword) {
		t.Fatal("the log shows the password")
	}
}

func TestNewerSchemaStopsStart(t *testing.T) {
	kv := serveEnv(t, nil)
	dir := kv["BRAIN_DATA_DIR"]
	if err := run(context.Background(), []string{"migrate"}, env(kv), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	db, err := store.OpenSQLite(context.Background(), store.SQLitePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), "INSERT INTO schema_migrations (set_name, version, name, applied_at) VALUES ('platform', 999, 'future', 0)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = run(context.Background(), nil, env(kv), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "version 999") {
		t.Fatalf("start on a newer schema: %v, want a clear refusal", err)
	}
}
