// Tests of the repository as a template: what a fork relies on.
package brain_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brain-template/brain/internal/product"
)

// modulePath reads the module line of go.mod.
func modulePath(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(p)
		}
	}
	tb.Fatal("go.mod has no module line")
	return ""
}

// repoFiles lists the files a clone has: tracked, plus new ones not ignored.
func repoFiles(tb testing.TB) []string {
	tb.Helper()
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		tb.Skipf("not a git work tree: %v", err) // a source tarball has nothing to fork from
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	return files
}

// importLines returns the line numbers of a Go file's import specs.
func importLines(tb testing.TB, path string) map[int]bool {
	tb.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	lines := map[int]bool{}
	for _, imp := range f.Imports {
		lines[fset.Position(imp.Path.Pos()).Line] = true
	}
	return lines
}

// TestModulePathOnlyInGoModAndImports keeps a fork's rename to one step:
// the module path may appear in go.mod's module line, in the benchmark
// module's go.mod (which `make rename` edits too) and in Go import lines,
// those of the Markdown files' Go code blocks (the guide's, in docs/)
// included, nowhere else.
func TestModulePathOnlyInGoModAndImports(t *testing.T) {
	mod := modulePath(t)
	for _, f := range repoFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), mod) || strings.ContainsRune(string(b), 0) {
			continue // binaries record the module path; they are not source
		}
		var imports map[int]bool
		switch {
		case strings.HasSuffix(f, ".go"):
			imports = importLines(t, f)
		case strings.HasSuffix(f, ".md"):
			imports = markdownImportLines(t, f, mod)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if !strings.Contains(line, mod) || imports[n] || (f == "go.mod" && line == "module "+mod) || f == "bench/go.mod" {
				continue
			}
			t.Errorf("%s:%d names the module path outside go.mod and imports: %s", f, n, strings.TrimSpace(line))
		}
	}
}

// markdownImportLines returns the line numbers of the import specs of mod's
// packages in the Go code blocks of a Markdown file (a tab, an optional
// name, and the quoted path), and in its diff blocks (the same, after the
// diff's ' ', '+' or '-').
func markdownImportLines(tb testing.TB, path, mod string) map[int]bool {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	spec := regexp.MustCompile(`^\t(\w+ )?"` + regexp.QuoteMeta(mod) + `(/[\w/.-]+)?"$`)
	lines := map[int]bool{}
	inGo, inDiff := false, false
	for n, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```go"):
			inGo = true
		case strings.HasPrefix(line, "```diff"):
			inDiff = true
		case strings.HasPrefix(line, "```"):
			inGo, inDiff = false, false
		case inGo && spec.MatchString(line), inDiff && line != "" && strings.ContainsRune(" +-", rune(line[0])) && spec.MatchString(line[1:]):
			lines[n+1] = true
		}
	}
	return lines
}

// TestForkRenameBuilds copies the repository, renames its module and its
// product name with `make rename` as a fork would, builds and vets the
// result, and checks what the name reaches (docs/fork.md): the settings'
// NOTES_* names in `notes -h`, the cookie notes_session and the messages
// in the spec, and the tests that assert the metrics' notes_* names and
// the 429's "notes is busy", run in the copy; `brain` survives in Go code
// only where docs/fork.md says it stays.
func TestForkRenameBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole tree again")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	mod := modulePath(t)
	// The client and the dashboard are not Go; nothing in them names the
	// module. Package web is: its Go files and the dist/ it embeds.
	dst := copyRepo(t, func(f string) bool {
		return !strings.HasPrefix(f, "web/") || (strings.HasSuffix(f, ".go") && !strings.Contains(f[len("web/"):], "/")) || strings.HasPrefix(f, "web/dist/")
	})
	const fork = "example.com/acme/notes"
	runIn(t, dst, "make", "rename", "MODULE="+fork, "NAME=notes")
	if got := runIn(t, dst, "go", "list", "-m"); got != fork {
		t.Fatalf("after make rename the module is %q, want %q", got, fork)
	}
	if out := runIn(t, dst, "grep", "-rlF", "--include=*.go", "--include=go.mod", "--include=*.md", mod, "."); out != "" {
		t.Fatalf("the old module path survives the rename in:\n%s", out)
	}
	runIn(t, dst, "go", "build", "./...")
	runIn(t, dst, "go", "vet", "./...")

	runIn(t, dst, "go", "build", "-o", "notes.bin", "./cmd/notes")
	help := runIn(t, dst, "./notes.bin", "-h")
	for _, want := range []string{"usage: notes [command]", "NOTES_ADDR", "NOTES_MAX_ITEMS", "MEM_IDEMPOTENCY_TTL_SECS", `(default "notes:")`} {
		if !strings.Contains(help, want) {
			t.Errorf("notes -h lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(help), "brain") {
		t.Errorf("notes -h still says brain:\n%s", help)
	}
	spec := runIn(t, dst, "./notes.bin", "openapi")
	for _, want := range []string{`"name": "notes_session"`, "sets the session cookie `notes_session`", `"title": "notes"`, "notes is an HTTP API"} {
		if !strings.Contains(spec, want) {
			t.Errorf("the renamed spec lacks %q", want)
		}
	}
	if strings.Contains(spec, "brain") {
		t.Error("the renamed spec still says brain")
	}
	// The copy's own tests, renamed with it, assert against a running
	// server: the metric names (notes_ratelimit_*, notes_jobs), the cookie
	// and the settings' names (the docs' table too); the 429's message is
	// the name's.
	for f, want := range map[string]string{"internal/product/product.go": `const Name = "notes"`, "api/ratelimit.go": `product.Name+" is busy — please retry in a moment."`, "cmd/notes/ratelimit_test.go": "notes_ratelimit_", "docs/configuration.md": "NOTES_ADDR"} {
		if b, err := os.ReadFile(filepath.Join(dst, f)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: want %q after the rename (%v)", f, want, err)
		}
	}
	// The renamed tests read NOTES_TEST_*: the services this run was given.
	test := exec.Command("go", "test", "-count=1", "./internal/product", "./api", "./cmd/notes", "-run", "Name|Security|Cookie|Session|Login|Metric|Refus|Rate|Config|Setting|Help")
	test.Dir = dst
	test.Env = os.Environ()
	for _, v := range []string{"TEST_DATABASE_URL", "TEST_REDIS_URL"} {
		if val := os.Getenv(product.EnvPrefix + v); val != "" {
			test.Env = append(test.Env, "NOTES_"+v+"="+val)
		}
	}
	if out, err := test.CombinedOutput(); err != nil {
		t.Fatalf("the renamed copy's tests: %v\n%s", err, out)
	}

	// What stays, as docs/fork.md lists it: identifiers, paths and hosts.
	stays := regexp.MustCompile(`brainSpec|/run/brain\.sock|//brain\.example|/tmp/brain|dir/brain`)
	for _, line := range strings.Split(runIn(t, dst, "grep", "-rn", "--include=*.go", "brain", "."), "\n") {
		if line != "" && !stays.MatchString(line) {
			t.Errorf("brain survives the rename: %s", line)
		}
	}
}

// copyRepo copies the files of repoFiles that keep says to keep into a
// temp dir, with their modification times (so make sees generated files as
// current), and returns the dir.
func copyRepo(tb testing.TB, keep func(string) bool) string {
	tb.Helper()
	dst := tb.TempDir()
	for _, f := range repoFiles(tb) {
		if !keep(f) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		fi, err := os.Stat(f)
		if err != nil {
			tb.Fatal(err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chtimes(to, fi.ModTime(), fi.ModTime()); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}

func runIn(tb testing.TB, dir, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && name == "grep" && ee.ExitCode() == 1 {
			return "" // grep found nothing
		}
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
