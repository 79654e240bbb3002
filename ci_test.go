// Tests of the CI set-up: the GitHub workflow, through .ci/run, gives the
// suites every tool and service they need under CI=true.

package brain_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/brain-template/brain/internal/product"
)

// The files that set CI up: the workflow GitHub runs, the script it runs, and
// the Makefile whose targets the script runs.
const (
	workflowFile = ".github/workflows/ci.yml"
	ciRunFile    = ".ci/run"
)

// ciNeeds is what the suites need of the machine under CI=true.
type ciNeeds struct {
	// tools are programs the tests look up on PATH (exec.LookPath).
	tools []string
	// settings are environment variables the tests read where CI=true
	// turns a skip into a failure: a service's URL, a tool's path.
	settings []string
}

// ciHandNeeds are needs written out as well as read from the sources: the
// services, and the tools whose path a suite reads from a setting.
func ciHandNeeds() ciNeeds {
	return ciNeeds{settings: []string{
		product.EnvPrefix + "TEST_DATABASE_URL", // PostgreSQL (store/storetest)
		product.EnvPrefix + "TEST_REDIS_URL",    // Redis (ratelimit/redistest)
		product.EnvPrefix + "TEST_JAEGER",       // the Jaeger all-in-one binary (the tracing test)
		"CHROMIUM",                              // the browser (web/test/chromium.ts)
	}}
}

// ciServices are the services behind settings: a workflow service container
// whose image starts with image, or .ci/run starting one (starts).
var ciServices = []struct {
	setting, image string
	starts         *regexp.Regexp
}{
	{product.EnvPrefix + "TEST_DATABASE_URL", "postgres", regexp.MustCompile(`(?m)^[^#\n]*pg_ctlcluster\b.*\bstart\b`)},
	{product.EnvPrefix + "TEST_REDIS_URL", "redis", regexp.MustCompile(`(?m)^[^#\n]*redis-server\b.*--daemonize yes`)},
}

// TestCIProvidesTestTools fails when a tool or service the suites need under
// CI=true is neither installed nor started by the workflow's test job, which
// must run on ubuntu-latest with CI "true". The needs are read from the
// sources (see scanCINeeds), plus ciHandNeeds. A job provides what .ci/run
// provides when a step runs it:
//
//   - a tool, by a `need TOOL PACKAGE` line (the package is installed when the
//     tool is missing), or by a step of its own that apt-get installs TOOL;
//   - a setting, by setting it (.ci/run, the workflow's env, or the Makefile
//     whose targets .ci/run runs);
//   - PostgreSQL and Redis, by a service container or .ci/run starting them.
//
// It cannot run the workflow: that GitHub's runner has what the job assumes
// (sudo, apt, Google Chrome) is docs/operations.md's to say.
func TestCIProvidesTestTools(t *testing.T) {
	needs := scanCINeeds(t, ".")
	t.Logf("tools %v; settings %v", needs.tools, needs.settings)
	for _, gap := range ciGaps(t, readText(t, workflowFile), readText(t, ciRunFile), readText(t, "Makefile"), needs.with(ciHandNeeds())) {
		t.Error(gap)
	}
}

// TestCIGapsSeen is TestCIProvidesTestTools's check seeing the gaps it is
// for: in the real files with one thing taken out, and in a new test file.
func TestCIGapsSeen(t *testing.T) {
	wf, run, mk := readText(t, workflowFile), readText(t, ciRunFile), readText(t, "Makefile")
	scanned := scanCINeeds(t, ".")
	if !slices.Contains(scanned.tools, "haproxy") || !slices.Contains(scanned.tools, "redis-cli") {
		t.Errorf("the scan missed haproxy or redis-cli, which cmd/*'s and ratelimit/redistest's sources look up: %v", scanned.tools)
	}
	if !slices.Contains(scanned.settings, "CHROMIUM") || !slices.Contains(scanned.settings, product.EnvPrefix+"TEST_REDIS_URL") {
		t.Errorf("the scan missed CHROMIUM or %sTEST_REDIS_URL, which web/test/chromium.ts and ratelimit/redistest read: %v", product.EnvPrefix, scanned.settings)
	}
	needs := scanned.with(ciHandNeeds())
	if gaps := ciGaps(t, wf, run, mk, needs); len(gaps) > 0 {
		t.Fatalf("the files as they are have gaps (TestCIProvidesTestTools lists them): %v", gaps)
	}

	// A new test that needs a tool, and a setting, that CI does not give.
	dir := t.TempDir()
	src := "package x\n\nimport (\n\t\"os\"\n\t\"os/exec\"\n\n\t\"example.com/internal/product\"\n)\n\n" +
		"const barEnv = product.EnvPrefix + \"TEST_BAR\"\n\n" +
		"func need() {\n\tif _, err := exec.LookPath(\"foo\"); err != nil && os.Getenv(\"CI\") == \"true\" {\n\t\tpanic(err)\n\t}\n" +
		"\tif os.Getenv(barEnv) == \"\" && os.Getenv(\"CI\") == \"true\" {\n\t\tpanic(barEnv)\n\t}\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	more := scanCINeeds(t, dir)
	if !slices.Equal(more.tools, []string{"foo"}) || !slices.Equal(more.settings, []string{product.EnvPrefix + "TEST_BAR"}) {
		t.Fatalf("scan of a test needing foo and %sTEST_BAR = %+v", product.EnvPrefix, more)
	}
	expectGaps(t, "a test needing foo", ciGaps(t, wf, run, mk, needs.with(more)), "foo", product.EnvPrefix+"TEST_BAR")

	cut := func(s, old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("%q is not there to change: the test is out of date with the file", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	need := regexp.MustCompile(`(?m)^need haproxy .*\n`)
	if !need.MatchString(run) {
		t.Fatal(ciRunFile + " has no `need haproxy` line")
	}
	expectGaps(t, ciRunFile+" without haproxy", ciGaps(t, wf, need.ReplaceAllString(run, ""), mk, needs), "haproxy")
	expectGaps(t, "the job on ubuntu-22.04", ciGaps(t, cut(wf, "runs-on: ubuntu-latest", "runs-on: ubuntu-22.04"), run, mk, needs), "ubuntu-latest")
	expectGaps(t, "CI false", ciGaps(t, cut(wf, `CI: "true"`, `CI: "false"`), run, mk, needs), `CI "true"`)
	expectGaps(t, "make test instead of .ci/run", ciGaps(t, regexp.MustCompile(`(?m)^(\s*)\.ci/run$`).ReplaceAllString(wf, "${1}make test"), run, mk, needs),
		"haproxy", "redis-server", "CHROMIUM", product.EnvPrefix+"TEST_JAEGER")
	noRedis := regexp.MustCompile(`(?m)^.*redis-server --daemonize.*$`).ReplaceAllString(run, "true")
	expectGaps(t, "Redis never started", ciGaps(t, wf, noRedis, mk, needs), "Redis")
}

// expectGaps fails unless each of words is in one of gaps.
func expectGaps(t *testing.T, what string, gaps []string, words ...string) {
	t.Helper()
	all := strings.Join(gaps, "\n")
	for _, w := range words {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no gap names %q; gaps:\n%s", what, w, all)
		}
	}
}

// TestCICachesJaeger keeps the Jaeger binary's one path in step: the
// Makefile's default JAEGER (where the workflow's make jaeger builds it),
// .ci/run's default for the setting, and the path the workflow restores and
// saves (a version bump in one alone would build, or cache, the wrong one).
func TestCICachesJaeger(t *testing.T) {
	mk, run := readText(t, "Makefile"), readText(t, ciRunFile)
	version := submatch(t, "Makefile", mk, `(?m)^JAEGER_VERSION :?= (\S+)$`)
	made := strings.ReplaceAll(submatch(t, "Makefile", mk, `(?m)^JAEGER \?= (\S+)$`), "$(JAEGER_VERSION)", version)
	made = strings.Replace(made, "$(HOME)", "~", 1)
	dflt := strings.Replace(submatch(t, ciRunFile, run, `\$\{`+product.EnvPrefix+`TEST_JAEGER:-([^}]+)\}`), "$HOME", "~", 1)
	if made != dflt {
		t.Errorf("the Makefile builds Jaeger into %s, %s points the tests at %s", made, ciRunFile, dflt)
	}
	// actions/cache restores and saves; cache/restore and cache/save each do one.
	restored, saved := []string{}, []string{}
	for _, j := range parseWorkflow(t, readText(t, workflowFile)).Jobs {
		for _, s := range j.Steps {
			paths := strings.Fields(fmt.Sprint(s.With["path"]))
			if strings.HasPrefix(s.Uses, "actions/cache@") || strings.HasPrefix(s.Uses, "actions/cache/restore@") {
				restored = append(restored, paths...)
			}
			if strings.HasPrefix(s.Uses, "actions/cache@") || strings.HasPrefix(s.Uses, "actions/cache/save@") {
				saved = append(saved, paths...)
			}
		}
	}
	if !slices.Contains(restored, dflt) || !slices.Contains(saved, dflt) {
		t.Errorf("the workflow restores %v and saves %v from the cache, not both the Jaeger binary %s", restored, saved, dflt)
	}
}

func submatch(t *testing.T, file, text, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s has no match for %s", file, re)
	}
	return m[1]
}

func readText(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// with returns n and m's needs together, sorted, without repeats.
func (n ciNeeds) with(m ciNeeds) ciNeeds {
	join := func(a, b []string) []string {
		s := slices.Concat(a, b)
		slices.Sort(s)
		return slices.Compact(s)
	}
	return ciNeeds{join(n.tools, m.tools), join(n.settings, m.settings)}
}

// scanCINeeds reads the needs from the test sources under root: Go test
// files and the files of test helper packages (a directory named with
// "test", such as ratelimit/redistest), and the browser tests' TypeScript
// (web/test).
//
// In Go, a tool is any exec.LookPath of a constant; a setting is any
// os.Getenv or os.LookupEnv of a constant in a function that also reads CI
// (the fail-under-CI idiom). In TypeScript, a setting is any process.env
// read in a file that also reads process.env.CI.
func scanCINeeds(tb testing.TB, root string) ciNeeds {
	tb.Helper()
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	var ts []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata" || n == "dist") {
				return filepath.SkipDir
			}
		case strings.HasSuffix(path, ".go") && (strings.HasSuffix(path, "_test.go") || strings.Contains(filepath.Base(filepath.Dir(path)), "test")):
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
		case strings.HasSuffix(path, ".ts") && strings.Contains(filepath.ToSlash(path), "web/test/"):
			ts = append(ts, path)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	var n ciNeeds
	for _, files := range byDir {
		consts := map[string]ast.Expr{}
		for _, f := range files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, s := range g.Specs {
						v := s.(*ast.ValueSpec)
						for i, name := range v.Names {
							if i < len(v.Values) {
								consts[name.Name] = v.Values[i]
							}
						}
					}
				}
			}
		}
		for _, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				var env []string
				ast.Inspect(fn.Body, func(x ast.Node) bool {
					call, ok := x.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					pkg, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					arg, known := constString(call.Args[0], consts, 0)
					switch {
					case !known:
					case pkg.Name == "exec" && sel.Sel.Name == "LookPath":
						n.tools = append(n.tools, arg)
					case pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv"):
						env = append(env, arg)
					}
					return true
				})
				if slices.Contains(env, "CI") {
					n.settings = append(n.settings, slices.DeleteFunc(env, func(s string) bool { return s == "CI" })...)
				}
			}
		}
	}
	read := regexp.MustCompile(`process\.env\.([A-Z][A-Z0-9_]*)\b(\s*=[^=])?`)
	for _, path := range ts {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		if !strings.Contains(string(b), "process.env.CI") {
			continue
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "CI" && m[2] == "" { // m[2]: an assignment, not a read
				n.settings = append(n.settings, m[1])
			}
		}
	}
	return n.with(ciNeeds{})
}

// constString evaluates a constant string expression of string literals,
// product.EnvPrefix, product.Name and the package's constants.
func constString(e ast.Expr, consts map[string]ast.Expr, depth int) (string, bool) {
	if depth > 10 {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.ParenExpr:
		return constString(e.X, consts, depth+1)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			a, ok1 := constString(e.X, consts, depth+1)
			b, ok2 := constString(e.Y, consts, depth+1)
			return a + b, ok1 && ok2
		}
	case *ast.SelectorExpr:
		switch e.Sel.Name {
		case "EnvPrefix":
			return product.EnvPrefix, true
		case "Name":
			return product.Name, true
		}
	case *ast.Ident:
		if v, ok := consts[e.Name]; ok {
			return constString(v, consts, depth+1)
		}
	}
	return "", false
}

// ciWorkflow is the part of a GitHub workflow these tests read.
type ciWorkflow struct {
	Env  map[string]any
	Jobs map[string]struct {
		RunsOn   any `yaml:"runs-on"`
		Env      map[string]any
		Services map[string]struct{ Image string }
		Steps    []struct {
			Uses, Run string
			Env       map[string]any
			With      map[string]any
		}
	}
}

func parseWorkflow(tb testing.TB, text string) ciWorkflow {
	tb.Helper()
	var wf ciWorkflow
	if err := yaml.Unmarshal([]byte(text), &wf); err != nil {
		tb.Fatalf("%s: %v", workflowFile, err)
	}
	return wf
}

// ciGaps lists what the workflow's test jobs lack of needs, given the
// workflow's, .ci/run's and the Makefile's text.
func ciGaps(tb testing.TB, workflow, run, makefile string, needs ciNeeds) []string {
	tb.Helper()
	wf := parseWorkflow(tb, workflow)
	runsScript := regexp.MustCompile(`(?m)^\s*(\./)?\.ci/run\b`)
	runsTests := regexp.MustCompile(`\.ci/run\b|\bmake test\b|\bgo test\b`)
	var gaps []string
	tested := false
	for name, job := range wf.Jobs {
		script, env := "", map[string]any{}
		for k, v := range wf.Env {
			env[k] = v
		}
		for k, v := range job.Env {
			env[k] = v
		}
		viaRun, tests := false, false
		for _, s := range job.Steps {
			script += s.Run + "\n"
			if runsTests.MatchString(s.Run) {
				tests = true
				for k, v := range s.Env {
					env[k] = v
				}
			}
			viaRun = viaRun || runsScript.MatchString(s.Run)
		}
		if !tests {
			continue
		}
		tested = true
		gap := func(format string, args ...any) {
			gaps = append(gaps, fmt.Sprintf("job %s: ", name)+fmt.Sprintf(format, args...))
		}
		if job.RunsOn != "ubuntu-latest" {
			gap("runs on %v, not ubuntu-latest (what .ci/run and docs/operations.md assume)", job.RunsOn)
		}
		if fmt.Sprint(env["CI"]) != "true" {
			gap(`has CI %q, not CI "true" (under which a missing tool fails its tests)`, fmt.Sprint(env["CI"]))
		}
		if viaRun {
			if !regexp.MustCompile(`(?m)^need\(\)`).MatchString(run) || !strings.Contains(run, `apt-get install -y -qq "${missing[@]}"`) {
				gap("%s no longer defines need() and installs what it misses with apt-get", ciRunFile)
			}
			script += run
		}
		for _, tool := range needs.tools {
			needLine := regexp.MustCompile(`(?m)^need ` + regexp.QuoteMeta(tool) + ` \S+`)
			installs := regexp.MustCompile(`(?m)^[^#\n]*apt-get install\b[^#\n]*\s` + regexp.QuoteMeta(tool) + `(\s|$)`)
			if !(viaRun && needLine.MatchString(run)) && !installs.MatchString(script) {
				gap("the tests look up %s, which neither %s (a `need %s PACKAGE` line) nor a step installs", tool, ciRunFile, tool)
			}
		}
		for _, s := range needs.settings {
			set := regexp.MustCompile(`(?m)^\s*(export\s+)?` + regexp.QuoteMeta(s) + `=`)
			_, inEnv := env[s]
			if !inEnv && !set.MatchString(script) && !(viaRun && regexp.MustCompile(`\b`+regexp.QuoteMeta(s)+`=`).MatchString(makefile)) {
				gap("the tests read %s under CI=true, which neither the workflow's env, %s nor the Makefile sets", s, ciRunFile)
			}
		}
		for _, svc := range ciServices {
			if !slices.Contains(needs.settings, svc.setting) {
				continue
			}
			up := viaRun && svc.starts.MatchString(run)
			for _, c := range job.Services {
				up = up || strings.HasPrefix(c.Image, svc.image)
			}
			if !up {
				gap("the tests use %s (%s), which neither a service container (image %s) nor %s starts", svc.setting, map[string]string{"postgres": "PostgreSQL", "redis": "Redis"}[svc.image], svc.image, ciRunFile)
			}
		}
	}
	if !tested {
		gaps = append(gaps, workflowFile+" has no job that runs the tests (.ci/run, make test or go test)")
	}
	slices.Sort(gaps)
	return gaps
}
