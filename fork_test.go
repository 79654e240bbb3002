// This file plays a fork's first week, in one copy of the repository, as
// docs/fork.md and docs/add-a-feature.md tell it.

package brain_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/product"
)

// The fork the test makes: its product name and its module path (not
// written whole here, since in the fork it is the module's path, which
// only go.mod and imports name).
const (
	forkName   = "notes"
	forkModule = "example.com/acme/" + forkName
)

// exampleWords are what the spec, the client and the dashboard of a fork
// without the example never say (a word may begin a name: jobs_queued),
// nor its error code; exampleNames, what no Go file of it names: the
// example's package and its settings.
var (
	exampleWords = regexp.MustCompile(`(?i)(^|[^a-z])(memor(y|ies)|jobs?|ingest|idempotency-key-reused)`)
	exampleNames = `ingest|MEM_`
)

// TestForkFirstWeek is a new team's first week with the template, each
// step in the same copy, committed after it as a fork would:
//
//  1. make rename to forkModule and forkName, then make client: the build,
//     the renamed names and the breaking-change gate are green;
//  2. two features from docs/add-a-feature.md, the guide's bookmarks and
//     links (the guide with its names changed), whose Go types have the
//     same names: each is new files only, both start, the spec names
//     their schemas apart, their tests pass, the client compiles and the
//     gate is green;
//  3. the example removed with docs/fork.md's commands: files deleted
//     only; it builds and vets, the gate fails on the removed paths (it
//     still catches a break after the rename), and the spec, the client
//     and the dashboard say nothing of memory, jobs or ingest;
//  4. the fork's whole test command, make test, on the services this run
//     was given (renamed), when FORK_CHECK=all (make fork-check); else its
//     fast form: build, vet, the client check, and this test seeing, in
//     the fork, that it has nothing more to play.
//
// In a tree that has removed the example, or followed the guide, it has
// played its part already, and skips.
func TestForkFirstWeek(t *testing.T) {
	if testing.Short() {
		t.Skip("copies, renames, extends and prunes the repository, building it each time")
	}
	if _, err := os.Stat("ingest"); err != nil {
		t.Skip("this tree has removed the memory example: it is a fork's own, tested by its own tests")
	}
	blocks := guideBlocks(t, ".")
	if applied, err := planGuide(t, ".", blocks); err != nil {
		t.Fatal(err)
	} else if applied {
		t.Skip("this tree has followed the guide already (it has every file the guide creates): it is a fork's own, tested by its own tests")
	}
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
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
	full := os.Getenv("FORK_CHECK") == "all"
	mod := modulePath(t)
	start := time.Now()
	f := &fork{t: t, dir: copyRepo(t, func(string) bool { return true })}
	// The copy uses the installed packages; its package files keep their
	// times, so make sees them installed.
	if err := os.Symlink(nodeModules, filepath.Join(f.dir, "web", "node_modules")); err != nil {
		t.Fatal(err)
	}
	f.run("git", "init", "-q")
	// .gitignore's /web/node_modules/ matches a directory, not the link.
	if err := os.WriteFile(filepath.Join(f.dir, ".git", "info", "exclude"), []byte("/web/node_modules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.commit("the template")

	// 1. The rename.
	f.run("make", "rename", "MODULE="+forkModule, "NAME="+forkName)
	// The rename gives the web package the fork's name, and no other
	// dependency: the package files keep their times, so that make does not
	// reinstall the packages the copy shares with this tree.
	for _, name := range []string{"web/package.json", "web/package-lock.json"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(f.dir, name), fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	f.run("make", "--no-print-directory", "client")
	if got := f.run("go", "list", "-m"); got != forkModule {
		t.Fatalf("after make rename the module is %q, want %q", got, forkModule)
	}
	if out := f.grep("-rlF", "--include=*.go", "--include=go.mod", "--include=*.md", mod, "."); out != "" {
		t.Errorf("the old module path survives the rename in:\n%s", out)
	}
	f.run("go", "build", "-o", forkName+".bin", "./cmd/"+forkName)
	help := f.run("./"+forkName+".bin", "-h")
	for _, want := range []string{"usage: notes [command]", "NOTES_ADDR", "NOTES_MAX_ITEMS", "MEM_IDEMPOTENCY_TTL_SECS", `(default "notes:")`} {
		if !strings.Contains(help, want) {
			t.Errorf("notes -h lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(help), "brain") {
		t.Errorf("notes -h still says brain:\n%s", help)
	}
	spec := f.read("openapi.json")
	for _, want := range []string{`"name": "notes_session"`, "sets the session cookie `notes_session`", `"title": "notes"`} {
		if !strings.Contains(spec, want) {
			t.Errorf("the renamed spec lacks %q", want)
		}
	}
	if strings.Contains(spec, "brain") {
		t.Error("the renamed spec still says brain")
	}
	// What stays, as docs/fork.md lists it: identifiers, paths and hosts.
	stays := regexp.MustCompile(`brainSpec|/run/brain\.sock|//brain\.example|/tmp/brain|dir/brain`)
	for _, line := range strings.Split(f.grep("-rn", "--include=*.go", "brain", "."), "\n") {
		if line != "" && !stays.MatchString(line) {
			t.Errorf("brain survives the rename: %s", line)
		}
	}
	if !full { // make test runs these, and the rest
		f.goTest("./internal/product", "./api", "./cmd/"+forkName, "-run", "Name|Security|Cookie|Session|Login|Metric|Refus|Rate|Config|Setting|Help")
	}
	// The rename accepted the one break it makes, the cookie's name in the
	// session scheme, and the gate is green.
	if ignore := f.read("openapi-breaking.ignore"); !strings.HasSuffix(ignore, " securitySchemes/session  # renamed from "+product.Name+" to "+forkName+" (make rename)\n") {
		t.Errorf("the ignore file after the rename ends %q; want the line accepting the session cookie's new name", ignore[max(0, len(ignore)-200):])
	}
	f.gate("after make rename")
	f.commit("renamed to " + forkName)

	// 2. Two features, by the guide.
	blocks = guideBlocks(t, f.dir) // the renamed guide: its imports are the fork's
	before := snapshot(t, f.dir)
	oldOps := operations(t, spec)
	links := renamed(blocks, strings.NewReplacer("bookmarks", "links", "Bookmarks", "Links", "bookmark", "link", "Bookmark", "Link"))
	for _, g := range append(slices.Clip(blocks), links...) {
		g.apply(t, f.dir)
	}
	f.run("make", "--no-print-directory", "openapi", "client")
	added, edited, _ := diffFiles(before, snapshot(t, f.dir))
	if len(edited) > 0 {
		t.Errorf("adding two features edited %v; want new files only, and the generated %v", edited, generated)
	}
	if out := f.run("gofmt", "-l", "."); out != "" {
		t.Errorf("the guide's Go is not gofmt'd:\n%s", out)
	}
	f.run("go", "vet", "./...")
	f.goTest("./bookmarks", "./links")
	f.run("make", "--no-print-directory", "client-check")
	spec = f.read("openapi.json")
	for id, limits := range operations(t, spec) {
		if _, ok := oldOps[id]; ok {
			continue
		}
		if !slices.ContainsFunc(limits, func(l rateLimit) bool { return l.Plane == "apikey" && l.Policy != "apikey" }) {
			t.Errorf("the feature's operation %s shows no budget of its own in x-rate-limit: %v", id, limits)
		}
	}
	// The schemas of the features' types of the same Go names are apart.
	schemas := schemaNames(t, spec)
	for _, feature := range []string{"Bookmarks", "Links"} {
		if !slices.ContainsFunc(schemas, func(s string) bool { return strings.HasPrefix(s, feature) && strings.HasSuffix(s, "View") }) {
			t.Errorf("the spec has no schema %s…View of the feature's View: %v", feature, schemas)
		}
	}
	// The binary migrates both features' sets.
	migrated := f.run("go", "run", "./cmd/"+forkName, "migrate", "--data-dir", t.TempDir())
	for _, set := range []string{"bookmarks", "links"} {
		if !strings.Contains(migrated, set) {
			t.Errorf("%s migrate does not apply the set %s: %s", forkName, set, migrated)
		}
	}
	f.gate("after adding two features")
	f.commit("bookmarks and links, as the guide shows")
	t.Logf("adding the two features: %d new files, %d generated ones edited, platform files edited: %d", len(added), len(generated), len(edited))

	// 3. The example removed.
	before = snapshot(t, f.dir)
	for _, line := range shLines(t, f.read("docs/fork.md"), "rm ") {
		f.run("sh", "-c", line)
	}
	f.run("make", "--no-print-directory", "openapi", "client")
	added, edited, removed := diffFiles(before, snapshot(t, f.dir))
	if len(added)+len(edited) > 0 {
		t.Errorf("removing the example added %v and edited %v; want files deleted only, and the generated %v", added, edited, generated)
	}
	if out := f.grep("-rliE", "--include=*.go", "--exclude=fork_test.go", exampleNames, "."); out != "" {
		t.Errorf("after the removal, still naming the example (%s):\n%s", exampleNames, f.grep("-rniE", "--include=*.go", "--exclude=fork_test.go", exampleNames, "."))
	}
	f.run("go", "build", "./...")
	f.run("go", "vet", "./...")
	f.run("make", "--no-print-directory", "client-check")
	// The gate still catches a real break: the example's paths are gone.
	gate := exec.Command("make", "--no-print-directory", "api-check")
	gate.Dir = f.dir
	if out, err := gate.CombinedOutput(); err == nil || !strings.Contains(string(out), "api-path-removed") {
		t.Errorf("make api-check after removing the example's operations: %v\n%s\nwant it to fail on the removed paths", err, tail(out, 30))
	}
	for _, file := range append([]string{"openapi.json", "web/index.html"}, f.files("web/src")...) {
		for i, line := range strings.Split(f.read(file), "\n") {
			if exampleWords.MatchString(line) {
				t.Errorf("%s:%d: without the example, still %q: %s", file, i+1, exampleWords.FindStringSubmatch(line)[2], strings.TrimSpace(line))
			}
		}
	}
	f.commit("without the memory example")
	t.Logf("removing the example: %d files deleted, %d generated ones edited, platform files edited: %d", len(removed), len(generated), len(edited))

	// 4. The fork's tests.
	if full {
		cmd := exec.Command("make", "--no-print-directory", "test")
		cmd.Dir = f.dir
		cmd.Env = f.env()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the fork's make test: %v\n%s", err, tail(out, 200))
		}
		t.Logf("the fork's make test passed:\n%s", tail(out, 12))
	} else {
		out := f.run("go", "test", "-count=1", "-v", "-run", "^TestForkFirstWeek$", ".")
		if !strings.Contains(out, "--- SKIP: TestForkFirstWeek") {
			t.Errorf("this test, in the fork:\n%s\nwant it to skip: the fork has played its first week", out)
		}
	}
	t.Logf("the fork's first week (full: %v) in %v", full, time.Since(start).Round(time.Second))
}

// generated are the files make openapi client writes, which every step
// regenerates.
var generated = []string{"openapi.json", "web/src/api/schema.d.ts", "web/src/api/budgets.ts"}

// A fork is the copy the test works in.
type fork struct {
	t   *testing.T
	dir string
}

// env is the environment of the fork's commands: this one, with the
// services this run was given under the fork's names.
func (f *fork) env() []string {
	env := os.Environ()
	for _, v := range []string{"TEST_DATABASE_URL", "TEST_REDIS_URL", "TEST_JAEGER"} {
		if val := os.Getenv(product.EnvPrefix + v); val != "" {
			env = append(env, strings.ToUpper(forkName)+"_"+v+"="+val)
		}
	}
	return env
}

func (f *fork) run(name string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = f.dir
	cmd.Env = f.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out, 200))
	}
	return strings.TrimSpace(string(out))
}

// grep is grep in the fork: "" when it finds nothing.
func (f *fork) grep(args ...string) string {
	f.t.Helper()
	cmd := exec.Command("grep", args...)
	cmd.Dir = f.dir
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return ""
	} else if err != nil {
		f.t.Fatalf("grep %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (f *fork) goTest(args ...string) {
	f.t.Helper()
	f.run("go", append([]string{"test", "-count=1"}, args...)...)
}

// gate runs the breaking-change gate: green, and checking something.
func (f *fork) gate(when string) {
	f.t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "api-check")
	cmd.Dir = f.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Errorf("make api-check %s: %v\n%s", when, err, out)
	}
}

func (f *fork) commit(msg string) {
	f.t.Helper()
	f.run("git", "add", "-A")
	f.run("git", "-c", "user.name=fork", "-c", "user.email=fork@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", msg)
}

func (f *fork) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// files are the regular files under dir in the fork, relative to it.
func (f *fork) files(dir string) []string {
	f.t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(f.dir, dir), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(f.dir, path)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// diffFiles compares two snapshots: the files added, those edited (but
// the generated ones) and those removed.
func diffFiles(before, after map[string]string) (added, edited, removed []string) {
	for name, h := range after {
		old, ok := before[name]
		switch {
		case !ok:
			added = append(added, name)
		case old != h && !slices.Contains(generated, name):
			edited = append(edited, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	slices.Sort(added)
	slices.Sort(edited)
	slices.Sort(removed)
	return added, edited, removed
}

// renamed is the blocks that create files, with r applied to their
// files and their text.
func renamed(blocks []guideBlock, r *strings.Replacer) []guideBlock {
	var out []guideBlock
	for _, g := range blocks {
		if g.creates() { // the first feature's sh blocks are run once
			out = append(out, guideBlock{lang: g.lang, file: r.Replace(g.file), text: r.Replace(g.text)})
		}
	}
	return out
}

// shLines are the lines of the sh blocks of doc that begin with prefix.
func shLines(tb testing.TB, doc, prefix string) []string {
	tb.Helper()
	var out []string
	for _, m := range fence.FindAllStringSubmatch(doc, -1) {
		if m[1] != "sh" {
			continue
		}
		for _, line := range strings.Split(m[3], "\n") {
			if strings.HasPrefix(line, prefix) {
				out = append(out, line)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatalf("the doc has no sh line beginning %q", prefix)
	}
	return out
}

// A rateLimit is an entry of an operation's x-rate-limit.
type rateLimit struct{ Plane, Policy string }

// operations maps the spec's operation ids to their x-rate-limit.
func operations(tb testing.TB, spec string) map[string][]rateLimit {
	tb.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string      `json:"operationId"`
			XRateLimit  []rateLimit `json:"x-rate-limit"`
		}
	}
	if err := json.Unmarshal([]byte(spec), &doc); err != nil {
		tb.Fatal(err)
	}
	out := map[string][]rateLimit{}
	for _, item := range doc.Paths {
		for _, op := range item {
			out[op.OperationID] = op.XRateLimit
		}
	}
	return out
}

// schemaNames are the names of the spec's component schemas, sorted.
func schemaNames(tb testing.TB, spec string) []string {
	tb.Helper()
	var doc struct {
		Components struct{ Schemas map[string]json.RawMessage }
	}
	if err := json.Unmarshal([]byte(spec), &doc); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for name := range doc.Components.Schemas {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
