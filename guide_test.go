package brain_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guidePath is the guide a fork follows to add a feature: every fenced
// code block in it is a step, which TestForkFirstWeek applies.
const guidePath = "docs/add-a-feature.md"

// A guideBlock is a fenced code block of the guide. Its info string says
// what to do with it: "go file=PATH" (or any language but sh) creates
// PATH with the block; "sh" runs each line in the repository. A feature is
// new files only: no block edits a file.
type guideBlock struct {
	lang, file, text string
}

// creates says whether g creates its file (rather than run).
func (g guideBlock) creates() bool { return g.file != "" }

var fence = regexp.MustCompile("(?ms)^```([a-z]+)([^\n]*)\n(.*?)^```$")

// guideBlocks returns the code blocks of the guide in the repository at
// dir, in order.
func guideBlocks(tb testing.TB, dir string) []guideBlock {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, guidePath))
	if err != nil {
		tb.Fatal(err)
	}
	var out []guideBlock
	for _, m := range fence.FindAllStringSubmatch(string(b), -1) {
		g := guideBlock{lang: m[1], text: m[3]}
		for _, attr := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(attr, "=")
			if k != "file" || m[1] == "diff" {
				tb.Fatalf("%s: a block's info string has %q; want file= on a block that is not a diff (a feature is new files only)", guidePath, attr)
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
	blocks := guideBlocks(t, ".")
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
