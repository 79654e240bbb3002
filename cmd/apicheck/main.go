// Command apicheck is the breaking-change gate (make api-check): it compares
// openapi.json with the same file at a base revision and fails when a change
// would break an existing client.
//
// The base is, in order: -base or API_BASE when given; on a branch other
// than main, its merge-base with main; on main (or a detached HEAD), the
// newest v* tag reachable from HEAD, else the first parent. A base without
// the spec file passes with a note. Deliberate breaks are listed in the
// ignore file, one line each with a reason (see apicheck.ParseIgnore).
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

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "api-check:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "run in this directory (inside the git work tree)")
	specPath := fs.String("spec", "openapi.json", "the revised spec, a file in the work tree")
	ignorePath := fs.String("ignore", "openapi-breaking.ignore", "accepted breaks, one per line with a reason; a missing file accepts none")
	base := fs.String("base", getenv("API_BASE"), "git revision to compare with (default: see the command doc; env API_BASE)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	g := gitIn(ctx, *dir)

	rev, err := os.ReadFile(filepath.Join(*dir, *specPath))
	if err != nil {
		return err
	}
	ignore, err := readIgnore(filepath.Join(*dir, *ignorePath))
	if err != nil {
		return err
	}

	baseRev, why, err := resolveBase(g, *base)
	if err != nil {
		return err
	}
	if baseRev == "" {
		fmt.Fprintf(stdout, "api-check: no base to compare with (%s): nothing can break; passing\n", why)
		return nil
	}
	rel, err := g("ls-files", "--full-name", "--error-unmatch", "--", *specPath)
	if err != nil {
		// An untracked spec still has a path relative to the top.
		prefix, perr := g("rev-parse", "--show-prefix")
		if perr != nil {
			return perr
		}
		rel = filepath.ToSlash(filepath.Join(prefix, *specPath))
	}
	baseSpec, err := g("show", baseRev+":"+rel)
	if err != nil {
		fmt.Fprintf(stdout, "api-check: base %s (%s) has no %s: nothing to break; passing\n", baseRev, why, rel)
		return nil
	}
	findings, err := apicheck.Check([]byte(baseSpec), rev)
	if err != nil {
		return err
	}
	breaking, accepted, unused := ignore.Filter(findings)
	fmt.Fprintf(stdout, "api-check: %s against %s (%s)\n", rel, baseRev, why)
	for _, f := range accepted {
		fmt.Fprintf(stdout, "  accepted by %s: %s\n", *ignorePath, f)
	}
	for _, u := range unused {
		fmt.Fprintf(stdout, "  note: %s %s matches no change; remove it\n", *ignorePath, u)
	}
	if len(breaking) == 0 {
		fmt.Fprintf(stdout, "api-check: no breaking changes (%d accepted)\n", len(accepted))
		return nil
	}
	for _, f := range breaking {
		fmt.Fprintf(stdout, "  error %s\n", f)
	}
	return fmt.Errorf("%d breaking change(s) against %s; if deliberate, add each to %s with a reason", len(breaking), baseRev, *ignorePath)
}

func readIgnore(path string) (*apicheck.IgnoreList, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return apicheck.ParseIgnore(bytes.NewReader(b), path)
}

// resolveBase picks the revision to compare with and says why. An empty
// revision means there is none (a repository's first commit).
func resolveBase(g gitFunc, explicit string) (rev, why string, err error) {
	if explicit != "" {
		if _, err := g("rev-parse", "--verify", "--quiet", explicit+"^{commit}"); err != nil {
			return "", "", fmt.Errorf("API_BASE %q is not a commit here", explicit)
		}
		return explicit, "API_BASE", nil
	}
	branch, _ := g("symbolic-ref", "--quiet", "--short", "HEAD")
	if branch != "" && branch != "main" {
		for _, main := range []string{"main", "origin/main"} {
			if mb, err := g("merge-base", "HEAD", main); err == nil {
				return mb, "merge-base of " + branch + " with " + main, nil
			}
		}
	}
	if tag, err := g("describe", "--tags", "--abbrev=0", "--match", "v*", "HEAD"); err == nil {
		return tag, "newest v* tag", nil
	}
	if _, err := g("rev-parse", "--verify", "--quiet", "HEAD^1"); err == nil {
		return "HEAD^1", "first parent", nil
	}
	return "", "HEAD has no parent", nil
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
