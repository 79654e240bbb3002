package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is a throwaway git repository for the gate to run in.
type repo struct {
	tb  testing.TB
	dir string
}

func newRepo(tb testing.TB) *repo {
	tb.Helper()
	r := &repo{tb: tb, dir: tb.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.tb.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *repo) write(name, content string) {
	r.tb.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
		r.tb.Fatal(err)
	}
}

func (r *repo) commit(msg string) {
	r.tb.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

// spec is a small valid document with one GET operation per path.
func spec(paths ...string) string {
	p := map[string]any{}
	for _, path := range paths {
		p[path] = map[string]any{"get": map[string]any{
			"operationId": strings.ReplaceAll(strings.Trim(path, "/"), "/", "-"),
			"responses":   map[string]any{"200": map[string]any{"description": "OK"}},
		}}
	}
	b, _ := json.MarshalIndent(map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "t", "version": "1"}, "paths": p}, "", "  ")
	return string(b) + "\n"
}

func (r *repo) check(env map[string]string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-C", r.dir}, func(k string) string { return env[k] }, &out, io.Discard)
	return out.String(), err
}

func TestGate(t *testing.T) {
	t.Run("NoBase", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.commit("first")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "HEAD has no parent") {
			t.Fatalf("out %q, err %v; want a pass with a note", out, err)
		}
	})
	t.Run("BaseWithoutSpec", func(t *testing.T) {
		r := newRepo(t)
		r.commit("empty")
		r.write("openapi.json", spec("/a"))
		r.commit("spec")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "has no openapi.json") {
			t.Fatalf("out %q, err %v; want a pass with a note", out, err)
		}
	})
	t.Run("FirstParentOnMain", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "first parent") || !strings.Contains(out, "[api-path-removed-without-deprecation] GET /b") {
			t.Fatalf("out %q, err %v; want the removal of /b to fail the gate against HEAD^1", out, err)
		}
	})
	t.Run("AdditivePasses", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.commit("one")
		r.commit("two")
		r.write("openapi.json", spec("/a", "/b"))
		if out, err := r.check(nil); err != nil {
			t.Fatalf("out %q, err %v; an added operation must pass", out, err)
		}
	})
	t.Run("NewestTagOnMain", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("release")
		r.git("tag", "v1.0.0")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		r.write("openapi.json", spec("/a", "/c"))
		r.commit("add /c")
		// Against the first parent nothing breaks; against v1.0.0, /b is gone.
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "v1.0.0 (newest v* tag)") {
			t.Fatalf("out %q, err %v; want a failure against v1.0.0", out, err)
		}
	})
	t.Run("MergeBaseOnBranch", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("main")
		r.git("checkout", "-q", "-b", "feature")
		r.write("openapi.json", spec("/a"))
		r.commit("feature drops /b")
		r.commit("feature goes on")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "merge-base of feature with main") {
			t.Fatalf("out %q, err %v; want a failure against the merge-base", out, err)
		}
	})
	t.Run("APIBaseWins", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.commit("one")
		first := r.git("rev-parse", "HEAD")
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		// Against HEAD^1 /b is removed; against the first commit nothing is.
		out, err := r.check(map[string]string{"API_BASE": first})
		if err != nil || !strings.Contains(out, "(API_BASE)") {
			t.Fatalf("out %q, err %v; want a pass against API_BASE", out, err)
		}
		if _, err := r.check(map[string]string{"API_BASE": "no-such-rev"}); err == nil {
			t.Fatal("an API_BASE that is not a commit must be an error")
		}
	})
	t.Run("IgnoredBreakPasses", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		r.write("openapi-breaking.ignore", "api-path-removed-without-deprecation GET /b # /b was never released\n")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "accepted by openapi-breaking.ignore") {
			t.Fatalf("out %q, err %v; want the accepted break to pass", out, err)
		}
	})
}
