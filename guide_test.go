package brain_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// guidePath is the guide a fork follows to add a feature: every fenced
// code block in it is a step, which TestAddOperationGuide applies.
const guidePath = "docs/add-a-feature.md"

// A guideBlock is a fenced code block of the guide. Its info string says
// what to do with it: "go file=PATH" (or any language but diff and sh)
// creates PATH with the block; "diff file=PATH" edits PATH (applyDiff);
// "sh" runs each line in the repository.
type guideBlock struct {
	lang, file, text string
}

// creates says whether g creates its file (rather than edit it or run).
func (g guideBlock) creates() bool { return g.file != "" && g.lang != "diff" }

var fence = regexp.MustCompile("(?ms)^```([a-z]+)([^\n]*)\n(.*?)^```$")

// guideBlocks returns the code blocks of the guide, in order.
func guideBlocks(tb testing.TB) []guideBlock {
	tb.Helper()
	b, err := os.ReadFile(guidePath)
	if err != nil {
		tb.Fatal(err)
	}
	var out []guideBlock
	for _, m := range fence.FindAllStringSubmatch(string(b), -1) {
		g := guideBlock{lang: m[1], text: m[3]}
		for _, attr := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(attr, "=")
			if k != "file" {
				tb.Fatalf("%s: a block's info string has %q; want file=", guidePath, attr)
			}
			g.file = v
		}
		out = append(out, g)
	}
	return out
}

// planGuide says whether the repository at dir, as a fork has it, has
// followed the guide: applied is true when dir has every file the guide
// creates, which are the fork's own now. When it has some of them but not
// all, the guide can be neither applied nor taken as applied, and err
// names them and says what to do.
func planGuide(tb testing.TB, dir string, blocks []guideBlock) (applied bool, err error) {
	tb.Helper()
	var have, missing []string
	for _, g := range blocks {
		if !g.creates() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, g.file)); err == nil {
			have = append(have, g.file)
		} else {
			missing = append(missing, g.file)
		}
	}
	switch {
	case len(missing) == 0:
		return true, nil
	case len(have) > 0:
		return false, fmt.Errorf("this tree has %s of the files the guide ("+guidePath+") creates, but not %s: "+
			"it is neither the template (the test would add the guide's files over these) nor a tree that followed the guide (the test would skip). "+
			"If these files are your own, rename them; if you followed the guide and then renamed or removed some of its files, give them all back the guide's names, or rename them all",
			strings.Join(have, ", "), strings.Join(missing, ", "))
	}
	return false, nil
}

// apply carries out block g in the repository at dir.
func (g guideBlock) apply(tb testing.TB, dir string) {
	tb.Helper()
	path := filepath.Join(dir, g.file)
	switch {
	case g.lang == "diff":
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("the guide edits %s: %v", g.file, err)
		}
		out, err := applyDiff(string(b), g.text)
		if err != nil {
			tb.Fatalf("the guide edits %s: %v", g.file, err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			tb.Fatal(err)
		}
	case g.file != "":
		if _, err := os.Stat(path); err == nil {
			tb.Fatalf("the guide creates %s, which exists already", g.file)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(g.text), 0o644); err != nil {
			tb.Fatal(err)
		}
	case g.lang == "sh":
		for _, line := range strings.Split(strings.TrimSpace(g.text), "\n") {
			if line == "make test" {
				continue // this test runs the tests the change concerns, below; all of them would run this test again
			}
			runIn(tb, dir, "sh", "-c", line)
		}
	default:
		tb.Fatalf("a %s block with no file=: the guide's blocks are files to write or edit, or sh to run", g.lang)
	}
}

// applyDiff edits src as diff says: hunks, each begun by a line "@@"
// (with a label after it, if any), of lines " context", "-removed" and
// "+added", without line numbers. Each hunk's context and removed lines,
// in order, must occur exactly once in src; they become its context and
// added lines.
func applyDiff(src, diff string) (string, error) {
	var hunks [][2][]string // old, new lines
	for _, line := range strings.Split(strings.TrimSuffix(diff, "\n"), "\n") {
		if strings.HasPrefix(line, "@@") || len(hunks) == 0 {
			hunks = append(hunks, [2][]string{})
			if strings.HasPrefix(line, "@@") {
				continue
			}
		}
		h := &hunks[len(hunks)-1]
		if line == "" {
			line = " " // an empty context line, its space trimmed
		}
		switch body := line[1:]; line[0] {
		case ' ':
			h[0], h[1] = append(h[0], body), append(h[1], body)
		case '-':
			h[0] = append(h[0], body)
		case '+':
			h[1] = append(h[1], body)
		default:
			return "", fmt.Errorf("the diff's line %q is not context, removed or added (' ', '-' or '+')", line)
		}
	}
	for _, h := range hunks {
		old, repl := strings.Join(h[0], "\n")+"\n", strings.Join(h[1], "\n")+"\n"
		if len(h[0]) == 0 {
			return "", fmt.Errorf("a hunk adds %q with no context to place it", repl)
		}
		if n := strings.Count("\n"+src, "\n"+old); n != 1 {
			return "", fmt.Errorf("the lines\n%s occur %d times, not once", old, n)
		}
		at := strings.Index("\n"+src, "\n"+old)
		src = src[:at] + repl + src[at+len(old):]
	}
	return src, nil
}

// TestAddOperationGuide follows the guide (docs/add-a-feature.md) as a fork
// would, in a copy of the repository: it applies the guide's code
// blocks, regenerates the spec and the client as the guide says, and
// runs the tests of the packages it touched. The new operations must be
// in the spec with their own budget in x-rate-limit, the files changed
// must be exactly those the guide names and the generated ones, and the
// typed client must compile. In a fork it stays green: a tree that has
// followed the guide is not given it twice (planGuide); the copy,
// committed, is such a fork (InAFork). The feature's migrations are a set
// of its own, numbered from 1, so a fork's own migrations never collide
// with them.
func TestAddOperationGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the repository")
	}
	blocks := guideBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("the guide has no code blocks")
	}
	applied, err := planGuide(t, ".", blocks)
	if err != nil {
		t.Fatal(err)
	}
	if applied {
		t.Skip("this tree has followed the guide already (it has every file the guide creates): what the guide added is the fork's own, tested by its own tests")
	}
	nodeModules, err := filepath.Abs("web/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nodeModules, ".package-lock.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("web/node_modules is not installed (make test installs it): %v", err)
		}
		t.Skip("web/node_modules is not installed; make test installs it")
	}
	dir := copyRepo(t, func(string) bool { return true })
	before := snapshot(t, dir)
	// The copy uses the installed packages; its package files keep their
	// times, so make sees them installed.
	if err := os.Symlink(nodeModules, filepath.Join(dir, "web", "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, g := range blocks {
		g.apply(t, dir)
	}

	// The files changed are those the guide names, and the generated ones.
	want := []string{"openapi.json", "web/src/api/schema.d.ts", "web/src/api/budgets.ts"}
	for _, g := range blocks {
		if g.file != "" {
			want = append(want, g.file)
		}
	}
	after := snapshot(t, dir)
	var changed []string
	for f, h := range after {
		if before[f] != h {
			changed = append(changed, f)
		}
	}
	slices.Sort(want)
	slices.Sort(changed)
	if !slices.Equal(changed, slices.Compact(want)) {
		t.Errorf("the guide changed %v; want exactly %v", changed, want)
	}

	if out := runIn(t, dir, "gofmt", "-l", "."); out != "" {
		t.Errorf("the guide's Go is not gofmt'd:\n%s", out)
	}
	runIn(t, dir, "go", "vet", "./...")
	// The tests of the packages the guide wrote or edited.
	var pkgs []string
	for _, g := range blocks {
		if strings.HasSuffix(g.file, ".go") {
			pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Dir(g.file)))
		}
	}
	slices.Sort(pkgs)
	runIn(t, dir, "go", append([]string{"test", "-count=1"}, slices.Compact(pkgs)...)...)
	runIn(t, dir, "make", "--no-print-directory", "client-check")

	// The binary migrates one set more than the template's: the feature's
	// tables are wired in, not only its tests'.
	sets := func(dir string) []string {
		out := runIn(t, dir, "go", "run", "./cmd/brain", "migrate", "--data-dir", t.TempDir())
		_, versions, _ := strings.Cut(out, "schema at versions ")
		versions, _, _ = strings.Cut(versions, " (")
		return strings.Split(versions, ", ")
	}
	if old, now := sets("."), sets(dir); len(now) != len(old)+1 || slices.ContainsFunc(old, func(s string) bool { return !slices.Contains(now, s) }) {
		t.Errorf("brain migrate applies the sets %v after the guide, %v before; want the guide's set added", now, old)
	}

	// The new operations are in the spec, each with a budget of its own.
	ops := func(spec string) map[string][]struct{ Plane, Policy string } {
		b, err := os.ReadFile(spec)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Paths map[string]map[string]struct {
				OperationID string                           `json:"operationId"`
				XRateLimit  []struct{ Plane, Policy string } `json:"x-rate-limit"`
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		out := map[string][]struct{ Plane, Policy string }{}
		for _, item := range doc.Paths {
			for _, op := range item {
				out[op.OperationID] = op.XRateLimit
			}
		}
		return out
	}
	old, now := ops("openapi.json"), ops(filepath.Join(dir, "openapi.json"))
	added := 0
	for id, limits := range now {
		if _, ok := old[id]; ok {
			continue
		}
		added++
		own := slices.ContainsFunc(limits, func(l struct{ Plane, Policy string }) bool {
			return l.Plane == "apikey" && l.Policy != "apikey"
		})
		if !own {
			t.Errorf("the guide's operation %s shows no budget of its own in x-rate-limit: %v", id, limits)
		}
	}
	if added == 0 {
		t.Errorf("the spec has no new operation after the guide; it has %v", slices.Sorted(maps.Keys(now)))
	}
	// Its schemas are named as the guide says: led by the package's name.
	if spec, err := os.ReadFile(filepath.Join(dir, "openapi.json")); err != nil || !strings.Contains(string(spec), `"#/components/schemas/BookmarksView"`) || !strings.Contains(string(spec), `"#/components/schemas/BookmarksCreateInputBody"`) {
		t.Errorf("the guide's spec does not refer to BookmarksView and BookmarksCreateInputBody (%v)", err)
	}

	// The copy is now a fork that followed the guide, and its tests of
	// what the guide added passed above. It commits what it added; the
	// guide's test, run there, sees the guide applied and does not add the
	// same files again.
	t.Run("InAFork", func(t *testing.T) {
		runIn(t, dir, "git", "init", "-q")
		// .gitignore's /web/node_modules/ matches a directory, not the link.
		if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/web/node_modules\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=fork", "-c", "user.email=fork@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "bookmarks, as the guide shows"}} {
			runIn(t, dir, "git", args...)
		}
		out := runIn(t, dir, "go", "test", "-count=1", "-v", "-run", "^TestAddOperationGuide$", ".")
		if !strings.Contains(out, "--- SKIP: TestAddOperationGuide") || !strings.Contains(out, "followed the guide already") {
			t.Fatalf("the guide's test in a fork that followed it:\n%s\nwant it to see the guide applied", out)
		}
	})
}

// snapshot maps each regular file under dir (not through symlinks) to its
// content.
func snapshot(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// The guide's test skips only in a tree that has every file the guide
// creates, and fails, saying what to do, in one that has some: a fork
// with a file of one of those names of its own once never ran the test.
func TestGuidePlanInAFork(t *testing.T) {
	blocks := guideBlocks(t)
	var created []string
	for _, g := range blocks {
		if g.creates() {
			created = append(created, g.file)
		}
	}
	if len(created) < 2 {
		t.Fatalf("the guide creates %v; this test wants two files or more", created)
	}
	dir := t.TempDir()
	if applied, err := planGuide(t, dir, blocks); applied || err != nil {
		t.Fatalf("in a tree with none of the guide's files: applied %v, err %v; want the guide to apply", applied, err)
	}
	write := func(f string) {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("// the fork's own\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A file of one of the guide's names, of the fork's own.
	one := created[len(created)-1]
	write(one)
	applied, err := planGuide(t, dir, blocks)
	if applied || err == nil || !strings.Contains(err.Error(), "has "+one+" of the files") || !strings.Contains(err.Error(), created[0]) || !strings.Contains(err.Error(), "rename") {
		t.Fatalf("with %s only: applied %v, err %v; want an error naming it and what is missing, and saying what to do", one, applied, err)
	}
	for _, f := range created {
		write(f)
	}
	if applied, err := planGuide(t, dir, blocks); !applied || err != nil {
		t.Fatalf("with every file the guide creates: applied %v, err %v; want the guide taken as applied", applied, err)
	}
}

// The guide's edits fit this tree: each of its diffs finds its lines, once
// (a quick check of what TestAddOperationGuide does at length). A tree
// that followed the guide has made the edits its own.
func TestGuideEditsApply(t *testing.T) {
	blocks := guideBlocks(t)
	if applied, err := planGuide(t, ".", blocks); applied || err != nil {
		t.Skipf("the guide is applied already (%v), or cannot be (%v)", applied, err)
	}
	edits := 0
	for _, g := range blocks {
		if g.lang != "diff" {
			continue
		}
		edits++
		b, err := os.ReadFile(g.file)
		if err != nil {
			t.Fatalf("the guide edits %s: %v", g.file, err)
		}
		if _, err := applyDiff(string(b), g.text); err != nil {
			t.Errorf("the guide edits %s: %v", g.file, err)
		}
	}
	if edits == 0 {
		t.Fatal("the guide wires its feature in with no edit")
	}
}

// applyDiff places each hunk by its lines alone, whole lines, and refuses
// lines it cannot place once.
func TestGuideApplyDiff(t *testing.T) {
	src := "package p\n\nvar xs = []int{\n\t1,\n}\n\nvar ys = []int{\n\t1,\n}\n"
	got, err := applyDiff(src, "@@ xs\n var xs = []int{\n+\t2,\n@@ ys\n var ys = []int{\n-\t1,\n+\t3,\n")
	if want := "package p\n\nvar xs = []int{\n\t2,\n\t1,\n}\n\nvar ys = []int{\n\t3,\n}\n"; err != nil || got != want {
		t.Fatalf("applyDiff = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{
		" \t1,\n+\t2,\n",            // twice in src
		" var zs = []int{\n+\t2,\n", // not in src
		" xs = []int{\n+\t2,\n",     // not a whole line
		"+\t2,\n",                   // nowhere to put it
		"*\t2,\n",                   // not a diff line
	} {
		if out, err := applyDiff(src, bad); err == nil {
			t.Errorf("applyDiff(%q) = %q, want an error", bad, out)
		}
	}
}
