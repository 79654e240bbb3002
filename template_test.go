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
// name, and the quoted path).
func markdownImportLines(tb testing.TB, path, mod string) map[int]bool {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	spec := regexp.MustCompile(`^\t(\w+ )?"` + regexp.QuoteMeta(mod) + `(/[\w/.-]+)?"$`)
	lines := map[int]bool{}
	inGo := false
	for n, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inGo = strings.HasPrefix(line, "```go")
		case inGo && spec.MatchString(line):
			lines[n+1] = true
		}
	}
	return lines
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
