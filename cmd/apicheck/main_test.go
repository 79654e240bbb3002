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

func (r *repo) check(env map[string]string, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"-C", r.dir}, args...), func(k string) string { return env[k] }, &out, io.Discard)
	return out.String(), err
}

func TestGate(t *testing.T) {
	t.Run("NoBase", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.commit("first")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "since the root") {
			t.Fatalf("out %q, err %v; want a pass walking from the root", out, err)
		}
	})
	t.Run("NoCommit", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		if out, err := r.check(nil); err != nil {
			t.Fatalf("out %q, err %v; want a pass: nothing to break", out, err)
		}
	})
	t.Run("BaseWithoutSpec", func(t *testing.T) {
		r := newRepo(t)
		r.commit("empty")
		r.write("openapi.json", spec("/a"))
		r.commit("spec")
		if out, err := r.check(nil); err != nil {
			t.Fatalf("out %q, err %v; want a pass: the spec's first commit breaks nothing", out, err)
		}
	})
	t.Run("BreakInLastCommit", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "(drop /b)") || !strings.Contains(out, "[api-path-removed-without-deprecation] GET /b") {
			t.Fatalf("out %q, err %v; want the removal of /b to fail the gate", out, err)
		}
	})
	// The hole this gate had: a break followed by any other commit passed,
	// as only HEAD^1 was compared with HEAD.
	t.Run("BreakBuriedUnderLaterCommits", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		r.write("README.md", "harmless\n")
		r.commit("docs")
		r.write("openapi.json", spec("/a", "/c"))
		r.commit("add /c")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "(drop /b)") || !strings.Contains(out, "GET /b") {
			t.Fatalf("out %q, err %v; want the buried removal of /b to fail the gate, naming its commit", out, err)
		}
	})
	// A commit that removes the spec breaks nothing by itself (there is
	// nothing to compare); the commit that brings it back is compared with
	// the spec as it was before the removal, not skipped as one whose
	// parent has none.
	t.Run("BreakAcrossRemoval", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.git("rm", "-q", "openapi.json")
		r.commit("remove the spec")
		r.write("openapi.json", spec("/a"))
		r.commit("the spec back, without /b")
		r.commit("later")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "(the spec back, without /b)") || !strings.Contains(out, "GET /b") {
			t.Fatalf("out %q, err %v; want the spec's return without /b to fail the gate", out, err)
		}
		// The same in the work tree: HEAD has no spec, the work tree's is
		// compared with the last one committed.
		r = newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.git("rm", "-q", "openapi.json")
		r.commit("remove the spec")
		r.write("openapi.json", spec("/a"))
		out, err = r.check(nil)
		if err == nil || !strings.Contains(out, "the work tree against") || !strings.Contains(out, "GET /b") {
			t.Fatalf("out %q, err %v; want the work tree's spec without /b to fail the gate", out, err)
		}
		// Brought back as it was, or grown: nothing broken.
		r = newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.git("rm", "-q", "openapi.json")
		r.commit("remove the spec")
		r.write("openapi.json", spec("/a", "/b", "/c"))
		r.commit("the spec back, with /c")
		if out, err := r.check(nil); err != nil {
			t.Fatalf("out %q, err %v; want a pass", out, err)
		}
	})
	t.Run("BreakInWorkTree", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "the work tree against HEAD") {
			t.Fatalf("out %q, err %v; want the uncommitted removal of /b to fail the gate", out, err)
		}
	})
	t.Run("CleanHistoryPasses", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.commit("one")
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("add /b")
		r.commit("empty")
		r.write("openapi.json", spec("/a", "/b", "/c"))
		r.commit("add /c")
		r.write("openapi.json", spec("/a", "/b", "/c", "/d"))
		if out, err := r.check(nil); err != nil || !strings.Contains(out, "changed it (3)") {
			t.Fatalf("out %q, err %v; additive commits must pass, each checked", out, err)
		}
	})
	// A branch merged into main is checked as the merge changed main:
	// its break is refused though later commits follow.
	t.Run("BreakMergedIn", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("main")
		r.git("checkout", "-q", "-b", "feature")
		r.write("openapi.json", spec("/a"))
		r.commit("feature drops /b")
		r.git("checkout", "-q", "main")
		r.write("README.md", "x\n")
		r.commit("main goes on")
		r.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
		r.write("README.md", "y\n")
		r.commit("after the merge")
		out, err := r.check(nil)
		if err == nil || !strings.Contains(out, "(merge feature)") {
			t.Fatalf("out %q, err %v; want the merge that dropped /b to fail the gate", out, err)
		}
	})
	t.Run("NewestTagOnMain", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("before")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b before the release")
		r.git("tag", "v1.0.0")
		r.write("openapi.json", spec("/a", "/c"))
		r.commit("add /c")
		// The break before v1.0.0 was released; only what follows is checked.
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "v1.0.0 (newest v* tag)") || !strings.Contains(out, "changed it (1)") {
			t.Fatalf("out %q, err %v; want a pass walking from v1.0.0", out, err)
		}
		r.write("openapi.json", spec("/c"))
		r.commit("drop /a")
		r.commit("later")
		if out, err := r.check(nil); err == nil || !strings.Contains(out, "GET /a") {
			t.Fatalf("out %q, err %v; want a failure for /a since v1.0.0", out, err)
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
			t.Fatalf("out %q, err %v; want a failure since the merge-base", out, err)
		}
	})
	// CI hands the previous head of a push: only what the push brings is
	// walked; a base of zeros (a new branch) falls back to the default.
	t.Run("APIBase", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("one")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b, pushed before")
		before := r.git("rev-parse", "HEAD")
		r.write("openapi.json", spec("/a", "/c"))
		r.commit("add /c")
		r.commit("more")
		out, err := r.check(map[string]string{"API_BASE": before})
		if err != nil || !strings.Contains(out, "(API_BASE)") {
			t.Fatalf("out %q, err %v; want a pass walking from API_BASE", out, err)
		}
		if out, err := r.check(map[string]string{"API_BASE": strings.Repeat("0", 40)}); err == nil || !strings.Contains(out, "since the root") {
			t.Fatalf("out %q, err %v; a zero API_BASE must fall back to the walk from the root, and find /b's removal", out, err)
		}
		if _, err := r.check(map[string]string{"API_BASE": "no-such-rev"}); err == nil {
			t.Fatal("an API_BASE that is not a commit must be an error")
		}
		r.write("openapi.json", spec("/a"))
		r.commit("drop /c")
		r.commit("after it")
		if out, err := r.check(map[string]string{"API_BASE": before}); err == nil || !strings.Contains(out, "(drop /c)") {
			t.Fatalf("out %q, err %v; want the pushed removal of /c to fail", out, err)
		}
	})
	t.Run("MaxWalk", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("one")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		r.commit("two")
		r.commit("three")
		if out, err := r.check(nil, "-max-walk", "3"); err == nil {
			t.Fatalf("out %q: the break 3 commits back must be within -max-walk 3", out)
		}
		if out, err := r.check(nil, "-max-walk", "2"); err != nil || !strings.Contains(out, "at most the last 2 commits") {
			t.Fatalf("out %q, err %v; want a pass that says how far it looked", out, err)
		}
	})
	t.Run("IgnoredBreakPasses", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b"))
		r.commit("two")
		r.write("openapi.json", spec("/a"))
		r.commit("drop /b")
		r.commit("later")
		r.write("openapi-breaking.ignore", "api-path-removed-without-deprecation GET /b # /b was never released\n")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "accepted by openapi-breaking.ignore") {
			t.Fatalf("out %q, err %v; want the break accepted by the file as it is now", out, err)
		}
	})
	// A commit's break is accepted by the ignore file as that commit has
	// it: removing the line later, as the gate's note says, keeps passing.
	t.Run("IgnoredPerCommit", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b", "/c"))
		r.commit("three")
		r.write("openapi.json", spec("/a", "/c"))
		r.write("openapi-breaking.ignore", "api-path-removed-without-deprecation GET /b # /b was never released\n")
		r.commit("drop /b, accepted")
		r.write("openapi-breaking.ignore", "")
		r.commit("the line removed")
		out, err := r.check(nil)
		if err != nil || !strings.Contains(out, "accepted by openapi-breaking.ignore: [api-path-removed-without-deprecation] GET /b") {
			t.Fatalf("out %q, err %v; want /b's removal accepted by its commit's file", out, err)
		}
		// That line accepts only the commit that has it.
		r.write("openapi.json", spec("/a"))
		r.write("openapi-breaking.ignore", "api-path-removed-without-deprecation GET /b # /b was never released\n")
		r.commit("drop /c, not accepted")
		if out, err := r.check(nil); err == nil || !strings.Contains(out, "error [api-path-removed-without-deprecation] GET /c") {
			t.Fatalf("out %q, err %v; want /c's removal refused", out, err)
		}
		// /b's line matches /b's removal, which is in the walk: no note.
		if out, _ := r.check(nil); strings.Contains(out, "note: openapi-breaking.ignore line 1") {
			t.Fatalf("out %q: a line matching a change in the walk is no stale line", out)
		}
	})
	// -accept writes the lines for the work tree's breaks (make rename's),
	// which then pass; the next break is refused as ever.
	t.Run("Accept", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a", "/b", "/c"))
		r.write("openapi-breaking.ignore", "# accepted breaks") // no newline at its end
		r.commit("three")
		r.write("openapi.json", spec("/a", "/c"))
		if out, err := r.check(nil, "-accept", "renamed"); err != nil || !strings.Contains(out, "accepts api-path-removed-without-deprecation GET /b") {
			t.Fatalf("out %q, err %v; want /b's removal accepted", out, err)
		}
		r.check(nil, "-accept", "again") // accepted already: nothing to add
		b, _ := os.ReadFile(filepath.Join(r.dir, "openapi-breaking.ignore"))
		if want := "# accepted breaks\napi-path-removed-without-deprecation GET /b  # renamed\n"; string(b) != want {
			t.Fatalf("the ignore file is %q, want %q", b, want)
		}
		r.commit("drop /b, accepted")
		if out, err := r.check(nil); err != nil {
			t.Fatalf("out %q, err %v; want a pass", out, err)
		}
		r.write("openapi.json", spec("/a"))
		if out, err := r.check(nil); err == nil || !strings.Contains(out, "error [api-path-removed-without-deprecation] GET /c") {
			t.Fatalf("out %q, err %v; want /c's removal refused", out, err)
		}
	})
	t.Run("StaleLineNoted", func(t *testing.T) {
		r := newRepo(t)
		r.write("openapi.json", spec("/a"))
		r.write("openapi-breaking.ignore", "api-path-removed-without-deprecation GET /b # long gone\n")
		r.commit("one")
		if out, err := r.check(nil); err != nil || !strings.Contains(out, "note: openapi-breaking.ignore line 1") {
			t.Fatalf("out %q, err %v; want a note on the stale line", out, err)
		}
	})
}
