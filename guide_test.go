package brain_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// guidePath is the guide a fork follows to add an operation: every fenced
// code block in it is a step, which TestAddOperationGuide applies.
const guidePath = "docs/add-a-feature.md"

// A guideBlock is a fenced code block of the guide. Its info
// string says what to do with it: "go file=PATH" creates PATH with the
// block; "go file=PATH in=FUNC" adds the block's lines at the end of the
// body of FUNC in PATH; "sh" runs each line in the repository.
type guideBlock struct {
	lang, file, in, text string
}

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
			switch k {
			case "file":
				g.file = v
			case "in":
				g.in = v
			default:
				tb.Fatalf("%s: a block's info string has %q; want file= and in=", guidePath, attr)
			}
		}
		out = append(out, g)
	}
	return out
}

// migrationFile is a numbered migration: its directory, number and name.
var migrationFile = regexp.MustCompile(`^(store/migrations/[a-z]+)/([0-9]{4})_([a-z0-9_]+\.sql)$`)

// planGuide fits the guide's blocks to the repository at dir, as a fork
// has it. applied is true when dir has every file the guide creates (a
// migration by its name, whatever its number): the fork followed the
// guide, and those files are its own now. When it has some of them but
// not all, the guide can be neither applied nor taken as applied, and err
// names them and says what to do. Else the blocks come back with each
// migration numbered after the highest the fork has in its directory,
// when the guide's number is taken.
func planGuide(tb testing.TB, dir string, blocks []guideBlock) (applied bool, out []guideBlock, err error) {
	tb.Helper()
	var have, missing []string
	for _, g := range blocks {
		if g.file == "" || g.in != "" {
			continue
		}
		pattern := filepath.Join(dir, g.file)
		if m := migrationFile.FindStringSubmatch(g.file); m != nil {
			pattern = filepath.Join(dir, m[1], "[0-9][0-9][0-9][0-9]_"+m[3])
		}
		if found, _ := filepath.Glob(pattern); len(found) > 0 {
			have = append(have, g.file)
		} else {
			missing = append(missing, g.file)
		}
	}
	switch {
	case len(missing) == 0:
		return true, nil, nil
	case len(have) > 0:
		return false, nil, fmt.Errorf("this tree has %s of the files the guide ("+guidePath+") creates, but not %s: "+
			"it is neither the template (the test would add the guide's files over these) nor a tree that followed the guide (the test would skip). "+
			"If these files are your own, rename them; if you followed the guide and then renamed or removed some of its files, give them all back the guide's names, or rename them all",
			strings.Join(have, ", "), strings.Join(missing, ", "))
	}
	for _, g := range blocks {
		if m := migrationFile.FindStringSubmatch(g.file); m != nil {
			entries, err := os.ReadDir(filepath.Join(dir, m[1]))
			if err != nil {
				tb.Fatal(err)
			}
			n, _ := strconv.Atoi(m[2])
			highest := 0
			for _, e := range entries {
				if v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0]); err == nil {
					highest = max(highest, v)
				}
			}
			if n <= highest {
				g.file = fmt.Sprintf("%s/%04d_%s", m[1], highest+1, m[3])
			}
		}
		out = append(out, g)
	}
	return false, out, nil
}

// apply carries out block g in the repository at dir.
func (g guideBlock) apply(tb testing.TB, dir string) {
	tb.Helper()
	switch {
	case g.file != "" && g.in == "":
		path := filepath.Join(dir, g.file)
		if _, err := os.Stat(path); err == nil {
			tb.Fatalf("the guide creates %s, which exists already", g.file)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(g.text), 0o644); err != nil {
			tb.Fatal(err)
		}
	case g.file != "":
		path := filepath.Join(dir, g.file)
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("the guide adds to %s: %v", g.file, err)
		}
		src := string(b)
		start := strings.Index(src, "\nfunc "+g.in+"(")
		end := strings.Index(src[max(start, 0):], "\n}\n")
		if start < 0 || end < 0 {
			tb.Fatalf("the guide adds to func %s in %s, which has none", g.in, g.file)
		}
		at := start + end + 1 // the closing brace
		if err := os.WriteFile(path, []byte(src[:at]+g.text+src[at:]), 0o644); err != nil {
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
		tb.Fatalf("a %s block with no file=: the guide's blocks are files to write or sh to run", g.lang)
	}
}

// TestAddOperationGuide follows the guide (docs/add-a-feature.md) as a fork
// would, in a copy of the repository: it applies the guide's code
// blocks, regenerates the spec and the client as the guide says, and
// runs the tests of the packages it touched. The new operations must be
// in the spec with their own budget in x-rate-limit, the files changed
// must be exactly those the guide names and the generated ones, and the
// typed client must compile. In a fork it stays green: a tree that has
// followed the guide is not given it twice, and the guide's migrations
// come after the fork's own (planGuide); the copy, committed, is such a
// fork (InAFork).
func TestAddOperationGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the repository")
	}
	blocks := guideBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("the guide has no code blocks")
	}
	applied, blocks, err := planGuide(t, ".", blocks)
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
	runIn(t, dir, "go", "test", "-count=1", "./api/...", "./store/...", "./cmd/...")
	runIn(t, dir, "make", "--no-print-directory", "client-check")

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

// A fork that numbered its own migration as the guide's next one gets the
// guide's migrations after its own; the template's are left as they are.
func TestGuideMigrationsAfterTheFork(t *testing.T) {
	blocks := guideBlocks(t)
	migrations := func(blocks []guideBlock) (files []string) {
		for _, g := range blocks {
			if migrationFile.MatchString(g.file) {
				files = append(files, g.file)
			}
		}
		return files
	}
	guide := migrations(blocks)
	if len(guide) == 0 {
		t.Fatal("the guide adds no migration")
	}
	dir := copyRepo(t, func(f string) bool { return strings.HasPrefix(f, "store/migrations/") })
	if _, got, _ := planGuide(t, dir, blocks); !slices.Equal(migrations(got), guide) {
		t.Fatalf("in the template the guide's migrations are %v, want them as written, %v", migrations(got), guide)
	}
	var want []string
	for _, f := range guide {
		m := migrationFile.FindStringSubmatch(f)
		n, _ := strconv.Atoi(m[2])
		fork := fmt.Sprintf("%s/%04d_notes.sql", m[1], n) // the fork's own, in the guide's slot
		if err := os.WriteFile(filepath.Join(dir, fork), []byte("CREATE TABLE notes (id TEXT PRIMARY KEY);\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s/%04d_%s", m[1], n+1, m[3]))
	}
	if _, got, _ := planGuide(t, dir, blocks); !slices.Equal(migrations(got), want) {
		t.Fatalf("after the fork's own migrations the guide's are %v, want %v", migrations(got), want)
	}
}

// The guide's test skips only in a tree that has every file the guide
// creates, and fails, saying what to do, in one that has some: a fork
// with a file of one of those names of its own once never ran the test.
func TestGuidePlanInAFork(t *testing.T) {
	blocks := guideBlocks(t)
	var created []string
	for _, g := range blocks {
		if g.file != "" && g.in == "" {
			created = append(created, g.file)
		}
	}
	if len(created) < 2 {
		t.Fatalf("the guide creates %v; this test wants two files or more", created)
	}
	dir := copyRepo(t, func(f string) bool { return strings.HasPrefix(f, "store/migrations/") })
	if applied, out, err := planGuide(t, dir, blocks); applied || err != nil || len(out) != len(blocks) {
		t.Fatalf("in the template: applied %v, %d blocks, err %v; want the guide's %d blocks", applied, len(out), err, len(blocks))
	}
	write := func(f string) {
		if m := migrationFile.FindStringSubmatch(f); m != nil {
			// The fork had a migration of its own in the guide's slot.
			n, _ := strconv.Atoi(m[2])
			f = fmt.Sprintf("%s/%04d_%s", m[1], n+1, m[3])
		}
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
	applied, _, err := planGuide(t, dir, blocks)
	if applied || err == nil || !strings.Contains(err.Error(), "has "+one+" of the files") || !strings.Contains(err.Error(), created[0]) || !strings.Contains(err.Error(), "rename") {
		t.Fatalf("with %s only: applied %v, err %v; want an error naming it and what is missing, and saying what to do", one, applied, err)
	}
	// Every file, the migrations numbered after the fork's own: applied.
	for _, f := range created {
		write(f)
	}
	if applied, _, err := planGuide(t, dir, blocks); !applied || err != nil {
		t.Fatalf("with every file the guide creates: applied %v, err %v; want the guide taken as applied", applied, err)
	}
}
