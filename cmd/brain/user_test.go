package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/store/storetest"
)

// brain user passwd, end to end: a user logged in over HTTP loses the
// session, the old password stops working and the new one works.
func TestUserPasswd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			kv := serveEnv(t, map[string]string{"BRAIN_DATABASE_URL": storetest.URL(t, d)})
			ctx := context.Background()
			user := func(stdin string, args ...string) (string, error) {
				var out bytes.Buffer
				err := run(ctx, append([]string{"user"}, args...), env(kv), strings.NewReader(stdin), &out, io.Discard)
				return out.String(), err
			}
			if _, err := user("the old password\n", "add", "--username", "grace"); err != nil {
				t.Fatal(err)
			}
			base, _, stop := runServer(t, kv)
			c := client{t, base}
			cookie, _ := sessionCookieOf(t, login(c, "grace", "the old password").want(t, 200, "login"))
			c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 200, "me before passwd")
			stop()

			if _, err := user("the new password\n", "passwd", "--username", "nobody"); err == nil || err.Error() != `no user named "nobody"` {
				t.Fatalf("passwd of an unknown user: err = %v", err)
			}
			if _, err := user("short\n", "passwd", "--username", "grace"); err == nil || !strings.Contains(err.Error(), "12 to 1024") {
				t.Fatalf("passwd with a short password: err = %v, want the bounds", err)
			}
			if _, err := user("the new password\n", "passwd"); err == nil || !strings.Contains(err.Error(), "--username") {
				t.Fatalf("passwd without --username: err = %v", err)
			}
			out, err := user("the new password\n", "passwd", "--username", "Grace")
			if err != nil || !strings.Contains(out, "set the password of grace") {
				t.Fatalf("passwd: %v %q", err, out)
			}

			base, _, _ = runServer(t, kv)
			c = client{t, base}
			c.do("GET", "/api/v1/auth/me", nil, cookie).want(t, 401, "the session from before passwd")
			login(c, "grace", "the old password").want(t, 401, "the old password")
			login(c, "grace", "the new password").want(t, 200, "the new password")
		})
	}
}

func TestUserUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{{"user"}, {"user", "frobnicate"}} {
		var stderr bytes.Buffer
		err := run(ctx, args, env(nil), nil, io.Discard, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "\n  add ") || !strings.Contains(stderr.String(), "\n  passwd ") {
			t.Errorf("brain %s: err = %v, stderr:\n%s\nwant an error and the user commands", strings.Join(args, " "), err, stderr.String())
		}
	}
	var stdout bytes.Buffer
	if err := run(ctx, []string{"user", "help"}, env(nil), nil, &stdout, io.Discard); err != nil || !strings.Contains(stdout.String(), "\n  passwd ") {
		t.Errorf("brain user help: err = %v, stdout:\n%s", err, stdout.String())
	}
}

// Admin is a role: the first user has it, and brain user add --admin
// gives it; an Admin operation (the live load, with BRAIN_LIVE_ACCESS=admin)
// admits those users whatever their names and refuses the others, a user
// named admin among them.
func TestUserAddAdmin(t *testing.T) {
	kv := serveEnv(t, map[string]string{"BRAIN_DATA_DIR": t.TempDir(), "BRAIN_LIVE_ACCESS": "admin"})
	ctx := context.Background()
	const pw = "a long enough password"
	for _, c := range []struct {
		name  string
		admin bool
		args  []string
	}{
		{"grace", true, nil}, // the first user
		{"admin", false, nil},
		{"root", true, []string{"--admin"}},
		{"dave", false, nil},
	} {
		var out bytes.Buffer
		args := append([]string{"user", "add", "--username", c.name}, c.args...)
		if err := run(ctx, args, env(kv), strings.NewReader(pw+"\n"), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "an admin"); got != c.admin {
			t.Fatalf("brain %s: %q; want admin %v", strings.Join(args, " "), out.String(), c.admin)
		}
	}
	base, _, _ := runServer(t, kv)
	cl := client{t, base}
	for name, want := range map[string]int{"grace": 200, "root": 200, "admin": 403, "dave": 403} {
		cookie, _ := sessionCookieOf(t, login(cl, name, pw).want(t, 200, "login "+name))
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/system/live", nil)
		req.Header.Set("Cookie", strings.TrimPrefix(cookie, "Cookie: "))
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != want {
			t.Fatalf("%s on the admin-only live stream: %v %v; want %d", name, res, err, want)
		}
		res.Body.Close()
		cancel()
	}
}
