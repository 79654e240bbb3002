// Command apicheck is the breaking-change gate (make api-check): it fails when
// a commit since the base (along first parents), or the work tree against HEAD,
// changed openapi.json in a way that breaks a client and the ignore file does
// not accept. The base is -base or API_BASE; else a branch's merge-base with
// main; else the newest v* tag; else at most -max-walk commits back.
// With -accept REASON it only appends a line for each break of the work tree.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/brain-template/brain/apicheck"
)

const maxWalk = 200 // the default of -max-walk

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "api-check:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	c, err := newGate(gitIn(ctx, o.dir), o, stdout)
	if err != nil {
		return err
	}
	if o.accept != "" {
		return c.accept(filepath.Join(o.dir, o.ignorePath), o.accept)
	}
	commits, why, err := walk(c.git, o.base, c.rel, o.limit)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "api-check: %s, as each commit since %s changed it (%d), then in the work tree\n", c.rel, why, len(commits))
	for _, commit := range commits {
		if err := c.checkCommit(commit); err != nil {
			return err
		}
	}
	if err := c.checkWorktree(); err != nil {
		return err
	}
	return c.verdict(why)
}

// options are the command's flags.
type options struct {
	dir, specPath, ignorePath, base, accept string
	limit                                   int
}

func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.dir, "C", ".", "run in this directory (inside the git work tree)")
	fs.StringVar(&o.specPath, "spec", "openapi.json", "the revised spec, a file in the work tree")
	fs.StringVar(&o.ignorePath, "ignore", "openapi-breaking.ignore", "accepted breaks, one per line with a reason; a missing file accepts none")
	fs.StringVar(&o.base, "base", getenv("API_BASE"), "git revision to walk from (default: see the command doc; env API_BASE)")
	fs.IntVar(&o.limit, "max-walk", maxWalk, "with no base, walk at most this many commits back from HEAD")
	fs.StringVar(&o.accept, "accept", "", "check nothing: append to the ignore file a line with this reason for each break of the work tree against HEAD it does not accept")
	return o, fs.Parse(args)
}

// A gate holds the work tree's spec and ignore list, their paths from its top,
// and the breaks found, to count those no ignore list accepts.
type gate struct {
	git              gitFunc
	out              io.Writer
	spec, ignoreText []byte
	ignore           *apicheck.IgnoreList // the work tree's
	ignorePath       string               // as -ignore names it
	rel, ignoreRel   string
	all              []apicheck.Finding // to tell which ignore lines matched none
	failed           int
}

func newGate(g gitFunc, o options, out io.Writer) (c *gate, err error) {
	c = &gate{git: g, out: out, ignorePath: o.ignorePath}
	if c.spec, err = os.ReadFile(filepath.Join(o.dir, o.specPath)); err != nil {
		return nil, err
	}
	c.ignoreText, err = os.ReadFile(filepath.Join(o.dir, o.ignorePath))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if c.ignore, err = apicheck.ParseIgnore(bytes.NewReader(c.ignoreText), o.ignorePath); err != nil {
		return nil, err
	}
	prefix, err := g("rev-parse", "--show-prefix") // the paths from the top, as git show REV:PATH wants them
	top := func(path string) string { return filepath.ToSlash(filepath.Clean(filepath.Join(prefix, path))) }
	c.rel, c.ignoreRel = top(o.specPath), top(o.ignorePath)
	return c, err
}

// check compares base with revised; a break is accepted by ignore or the work tree's list.
func (c *gate) check(what string, base, revised []byte, ignore *apicheck.IgnoreList) error {
	findings, err := apicheck.Check(base, revised)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.all = append(c.all, findings...)
	breaking, accepted, _ := ignore.Filter(findings)
	breaking, acceptedNow, _ := c.ignore.Filter(breaking)
	accepted = append(accepted, acceptedNow...)
	if len(breaking) == 0 && len(accepted) == 0 {
		return nil
	}
	fmt.Fprintf(c.out, "  %s:\n", what)
	for _, f := range accepted {
		fmt.Fprintf(c.out, "    accepted by %s: %s\n", c.ignorePath, f)
	}
	for _, f := range breaking {
		fmt.Fprintf(c.out, "    error %s\n", f)
	}
	c.failed += len(breaking)
	return nil
}

// checkCommit checks commit's spec against the one before, with commit's ignore list.
func (c *gate) checkCommit(commit string) error {
	spec, err := c.git("show", commit+":"+c.rel)
	if err != nil {
		return nil // the commit removed the spec: the next one that has it is compared with the last before
	}
	parent, from, ok := lastSpec(c.git, commit+"^1", c.rel)
	if !ok || spec == parent {
		return nil // no earlier spec (or no parent): nothing to break
	}
	ib, _ := c.git("show", commit+":"+c.ignoreRel) // a commit without the file accepts nothing
	ignore, err := apicheck.ParseIgnore(strings.NewReader(ib), commit[:12]+":"+c.ignoreRel)
	if err != nil {
		return err
	}
	subject, _ := c.git("log", "-1", "--format=%s", commit)
	if r := []rune(subject); len(r) > 72 {
		subject = string(r[:71]) + "…"
	}
	what := fmt.Sprintf("commit %s (%s)", commit[:12], subject)
	if from != commit+"^1" {
		what += " against " + from[:12] + ", the spec's last commit before it was removed"
	}
	return c.check(what, []byte(parent), []byte(spec), ignore)
}

func (c *gate) checkWorktree() error {
	head, from, ok := lastSpec(c.git, "HEAD", c.rel)
	if !ok || head == strings.TrimSpace(string(c.spec)) {
		return nil
	}
	what := "the work tree against HEAD"
	if from != "HEAD" {
		what = "the work tree against " + from[:12] + ", the spec's last commit before HEAD removed it"
	}
	return c.check(what, []byte(head), c.spec, nil)
}

// verdict notes the ignore lines that matched nothing and fails on any unaccepted break.
func (c *gate) verdict(why string) error {
	_, _, unused := c.ignore.Filter(c.all)
	for _, u := range unused {
		fmt.Fprintf(c.out, "  note: %s %s matches no change since %s; remove it\n", c.ignorePath, u, why)
	}
	if c.failed > 0 {
		return fmt.Errorf("%d breaking change(s) since %s; if deliberate, add each to %s with a reason", c.failed, why, c.ignorePath)
	}
	fmt.Fprintf(c.out, "api-check: no breaking changes\n")
	return nil
}

// accept appends to the ignore file a line, with reason, for each break of the
// work tree's spec against HEAD's that it does not accept.
func (c *gate) accept(path, reason string) error {
	head, _, ok := lastSpec(c.git, "HEAD", c.rel)
	if !ok {
		return nil // no spec committed: nothing to break
	}
	findings, err := apicheck.Check([]byte(head), c.spec)
	if err != nil {
		return err
	}
	breaking, _, _ := c.ignore.Filter(findings)
	b := c.ignoreText
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	lines := map[string]bool{} // one for two changes of one kind to one thing
	for _, f := range breaking {
		line := apicheck.IgnoreLine(f, reason) + "\n"
		if !lines[line] {
			lines[line] = true
			b = append(b, line...)
			fmt.Fprintf(c.out, "api-check: %s accepts %s", path, line)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return os.WriteFile(path, b, 0o644)
}

// lastSpec is the spec at path as rev, or else the nearest earlier first-parent
// commit that has one (from), has it.
func lastSpec(g gitFunc, rev, path string) (spec, from string, ok bool) {
	if spec, err := g("show", rev+":"+path); err == nil {
		return spec, rev, true
	}
	out, err := g("rev-list", "--first-parent", rev, "--", path)
	if err != nil {
		return "", "", false
	}
	for _, c := range strings.Fields(out) {
		if spec, err := g("show", c+":"+path); err == nil {
			return spec, c, true
		}
	}
	return "", "", false
}

// zeroRev is GitHub's previous head of a push that created the branch.
const zeroRev = "0000000000000000000000000000000000000000"

// walk returns the commits since the base that changed path, oldest first, and
// says what the base is.
func walk(g gitFunc, explicit, path string, limit int) (commits []string, why string, err error) {
	if _, err := g("rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, "no commit", nil // only the work tree
	}
	since, why, err := resolveBase(g, explicit, limit)
	if err != nil {
		return nil, "", err
	}
	if since == "" { // the root, or the commit maxWalk back when there are more
		since, _ = g("rev-list", "--first-parent", "--max-count=1", fmt.Sprintf("--skip=%d", limit), "HEAD")
	}
	revs := "HEAD"
	if since != "" {
		revs = since + "..HEAD"
	}
	out, err := g("rev-list", "--first-parent", "--reverse", revs, "--", path)
	return strings.Fields(out), why, err
}

// resolveBase picks the revision to walk from and says what it is; "" is the
// root, at most limit commits back.
func resolveBase(g gitFunc, explicit string, limit int) (rev, why string, err error) {
	if explicit != "" && explicit != zeroRev {
		if _, err := g("rev-parse", "--verify", "--quiet", explicit+"^{commit}"); err != nil {
			return "", "", fmt.Errorf("API_BASE %q is not a commit here", explicit)
		}
		mb, err := g("merge-base", explicit, "HEAD")
		if err != nil {
			return "", "", fmt.Errorf("API_BASE %q shares no history with HEAD", explicit)
		}
		return mb, explicit + " (API_BASE)", nil
	}
	branch, _ := g("symbolic-ref", "--quiet", "--short", "HEAD")
	if branch != "" && branch != "main" {
		for _, main := range []string{"main", "origin/main"} {
			if mb, err := g("merge-base", "HEAD", main); err == nil {
				return mb, "the merge-base of " + branch + " with " + main, nil
			}
		}
	}
	if tag, err := g("describe", "--tags", "--abbrev=0", "--match", "v*", "HEAD"); err == nil {
		return tag, tag + " (newest v* tag)", nil
	}
	return "", fmt.Sprintf("the root (no v* tag; at most the last %d commits)", limit), nil
}

type gitFunc func(args ...string) (string, error)

func gitIn(ctx context.Context, dir string) gitFunc {
	return func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
}
