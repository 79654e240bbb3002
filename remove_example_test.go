// This file proves the fork path "remove the example" (docs/fork.md): in
// a copy of the repository, delete the memory example and its wiring, one
// line and its import, and the rest builds, vets, documents no memory
// operation and no word of the example, and its settings match their
// docs with no edit.
package brain_test

import (
	"bytes"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// exampleMarker ends each line of the example's wiring outside ingest/;
// on a line of its own, it marks the line after it.
const exampleMarker = "// the memory example: delete with ingest/"

// wiringFile holds the example's wiring: the example is a module of
// brain's, listed on one line of modules().
const wiringFile = "cmd/brain/modules.go"

// exampleDirs and exampleFiles are the rest of the example outside its
// wiring: its package, its load tool, cmd/brain's tests that run it, and
// its page of the docs, with its settings' table.
var (
	exampleDirs  = []string{"ingest", "bench/ingestflood"}
	exampleFiles = []string{
		"cmd/brain/ingest_body_test.go",
		"cmd/brain/ingest_crash_test.go",
		"cmd/brain/ingest_e2e_test.go",
		"cmd/brain/ingest_replicas_test.go",
		"cmd/brain/ingest_settings_test.go",
		"cmd/brain/quotas_test.go",
		"cmd/brain/sse_test.go", // follow, a stream reader only those tests use
		// the scale-out tests, whose traffic is the example's ingests and
		// events: a fork keeps them by sending its own
		"cmd/brain/balancer_test.go",
		"cmd/brain/soak_test.go",
		"docs/memory.md",
	}
)

func TestRemoveTheExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and vets a copy of the repository")
	}
	start := time.Now()
	dir := copyRepo(t, func(f string) bool {
		return !strings.HasPrefix(f, "web/") || !strings.Contains(f[len("web/"):], "/") || strings.HasPrefix(f, "web/dist/")
	})
	for _, d := range exampleDirs {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range exampleFiles {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%v: the list of the example's files is out of date", err)
		}
	}
	// The wiring is one line, the module's in modules(), and its import,
	// which Go requires: any other marked line is wiring beyond it.
	wiring := []string{`"` + modulePath(t) + `/ingest"`, "ingest.NewModule(),"}
	found := map[string]bool{}
	for _, m := range markedLines(t, dir) {
		if m.file == wiringFile && slices.Contains(wiring, m.code) && !found[m.code] {
			found[m.code] = true
			continue
		}
		t.Errorf("%s:%d: %q is marked %q: the example's wiring is its line in modules() (%s) and that line's import, nothing else",
			m.file, m.line, m.code, exampleMarker, wiringFile)
	}
	for _, w := range wiring {
		if !found[w] {
			t.Errorf("%s has no line %s marked %q: the example's wiring is its line in modules() and that line's import", wiringFile, w, exampleMarker)
		}
	}
	marked := 0
	matches, _ := filepath.Glob(filepath.Join(dir, "cmd", "brain", "*.go"))
	for _, f := range matches {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, n := withoutMarked(t, f, src)
		marked += n
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if marked == 0 {
		t.Fatalf("no line of cmd/brain carries %q", exampleMarker)
	}
	if out := runIn(t, dir, "grep", "-rlF", "--include=*.go", `"`+modulePath(t)+`/ingest`, "."); out != "" {
		t.Fatalf("after the removal, still importing the example:\n%s", out)
	}
	runIn(t, dir, "go", "build", "./...")
	runIn(t, dir, "go", "vet", "./...")
	spec := runIn(t, dir, "go", "run", "./cmd/brain", "openapi")
	var paths []string
	for _, line := range strings.Split(spec, "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), `"/api/`); ok && strings.HasSuffix(line, "{") {
			paths = append(paths, "/api/"+p)
		}
	}
	if len(paths) == 0 {
		t.Fatal("the spec of the copy lists no path")
	}
	for _, p := range paths {
		if strings.Contains(p, "/memory") || strings.Contains(p, "/jobs") {
			t.Errorf("the spec without the example still has %s", p)
		}
	}
	// Nor does the platform's spec say a word of the example: its
	// description, its error codes, the live snapshot, every doc.
	for _, w := range exampleWords.FindAllString(spec, -1) {
		t.Errorf("the spec without the example still says %q", w)
	}
	runIn(t, dir, "go", "test", "-count=1", "-run", "^TestConfigurationDocMatchesSettings$", "./cmd/brain")
	t.Logf("removed %d marked lines; build, vet and spec in %v", marked, time.Since(start).Round(time.Second))
}

// exampleWords are the example's words, which the platform's spec never
// says.
var exampleWords = regexp.MustCompile(`(?i)\b(memory|ingest\w*|job\w*|notes?|skill\w*|project\w*|idempotency-key-reused)\b`)

// A markedLine is a line of Go that carries exampleMarker: the code
// before the marker, trimmed (empty when the marker is on a line of its
// own), in file (slash-separated, relative to the repository) at line.
type markedLine struct {
	file string
	line int
	code string
}

// markedLines are the marked lines of the Go files under dir, in order.
func markedLines(tb testing.TB, dir string) []markedLine {
	tb.Helper()
	var out []markedLine
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fset := token.NewFileSet()
		file := fset.AddFile(path, -1, len(src))
		var s scanner.Scanner
		s.Init(file, src, func(pos token.Position, msg string) { tb.Fatalf("%s: %s", pos, msg) }, scanner.ScanComments)
		for {
			pos, t, lit := s.Scan()
			if t == token.EOF {
				break
			}
			if t != token.COMMENT || lit != exampleMarker {
				continue
			}
			line := file.Line(pos)
			start := file.Offset(file.LineStart(line))
			out = append(out, markedLine{filepath.ToSlash(rel), line, strings.TrimSpace(string(src[start:file.Offset(pos)]))})
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// withoutMarked returns src without its marked lines: a line that ends in
// exampleMarker, or follows the marker on a line of its own, goes, with
// the lines up to the close of each bracket it opens and the comment lines
// just above it. n counts the marked lines.
func withoutMarked(tb testing.TB, name string, src []byte) (out []byte, n int) {
	tb.Helper()
	fset := token.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { tb.Fatalf("%s: %s", pos, msg) }, scanner.ScanComments)
	type tok struct {
		line int
		tok  token.Token
		lit  string
	}
	var toks []tok
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		if t == token.SEMICOLON && lit == "\n" {
			continue
		}
		toks = append(toks, tok{file.Line(pos), t, lit})
	}
	onlyComments := map[int]bool{} // lines whose every token is a comment
	code := map[int]bool{}
	for _, t := range toks {
		if t.tok == token.COMMENT {
			if !code[t.line] {
				onlyComments[t.line] = true
			}
		} else {
			code[t.line] = true
			delete(onlyComments, t.line)
		}
	}
	drop := map[int]bool{}
	for i, t := range toks {
		if t.tok != token.COMMENT || t.lit != exampleMarker {
			continue
		}
		n++
		line := t.line
		if onlyComments[line] { // the marker on a line of its own: the next line
			drop[line] = true
			line = 0
			for _, u := range toks[i+1:] {
				if u.tok != token.COMMENT {
					line = u.line
					break
				}
			}
		}
		first, last, depth := line, line, 0
		for _, u := range toks {
			if u.line < line || (u.line > last && depth == 0) {
				continue
			}
			switch u.tok {
			case token.LBRACE, token.LPAREN, token.LBRACK:
				depth++
			case token.RBRACE, token.RPAREN, token.RBRACK:
				depth--
			}
			last = u.line
		}
		for first > 1 && onlyComments[first-1] {
			first--
		}
		for l := first; l <= last; l++ {
			drop[l] = true
		}
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	for i, l := range lines {
		if !drop[i+1] {
			out = append(out, l...)
		}
	}
	return out, n
}
