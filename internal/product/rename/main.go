// Command rename gives a fork its own product name (`make rename NAME=…`,
// docs/fork.md): in every text file it rewrites OLD_ to NEW_, cmd/old to
// cmd/new (and moves it), old.db, and old as a word, but not in a module
// path or a host (after /, . or -, or before /).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/brain-template/brain/internal/product"
)

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// textExts are the files rewritten, besides Makefile, Containerfile and .ci/.
var textExts = map[string]bool{".go": true, ".md": true, ".ts": true, ".tsx": true, ".mjs": true, ".js": true, ".json": true, ".yml": true, ".yaml": true, ".sh": true, ".html": true, ".css": true, ".mod": true, ".cfg": true}

var skipDirs = map[string]bool{".git": true, "node_modules": true, "dist": true, "data": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/product/rename NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "rename:", err)
		os.Exit(1)
	}
}

func run(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("name %q: want a lower-case letter, then lower-case letters, digits or underscores (it becomes a metric namespace, a cookie name and, upper cased, an environment prefix)", name)
	}
	old := product.Name // as internal/product/product.go has it: this command is built from it
	if old == name {
		fmt.Printf("the name is %s already\n", name)
		return nil
	}
	n, err := rewriteTree(rewriter(old, name))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("cmd", old)); err == nil {
		if err := os.Rename(filepath.Join("cmd", old), filepath.Join("cmd", name)); err != nil {
			return err
		}
	}
	fmt.Printf("product renamed from %s to %s: %d files rewritten, cmd/%s moved to cmd/%s\n", old, name, n, old, name)
	return nil
}

// rewriteTree rewrites the tree's text files and returns how many changed.
func rewriteTree(rewrite func([]byte) []byte) (n int, err error) {
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && skipDirs[d.Name()] && path != ".":
			return filepath.SkipDir
		case !d.Type().IsRegular() || d.Name() == "package-lock.json" ||
			!textExts[filepath.Ext(path)] && d.Name() != "Makefile" && d.Name() != "Containerfile" && !strings.HasPrefix(path, ".ci/"):
			return nil
		}
		changed, err := rewriteFile(path, rewrite)
		if changed {
			n++
		}
		return err
	})
	return n, err
}

// rewriter replaces the name old by new in text.
func rewriter(old, new string) func([]byte) []byte {
	env := regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToUpper(old)) + `_`)
	cmd := regexp.MustCompile(`\bcmd/` + regexp.QuoteMeta(old) + `\b`)
	db := regexp.MustCompile(`\b` + regexp.QuoteMeta(old) + `\.db\b`) // after a / too (data/old.db)
	word := regexp.MustCompile(regexp.QuoteMeta(old))
	return func(b []byte) []byte {
		b = env.ReplaceAll(b, []byte(strings.ToUpper(new)+"_"))
		b = cmd.ReplaceAll(b, []byte("cmd/"+new))
		b = db.ReplaceAll(b, []byte(new+".db"))
		var out bytes.Buffer
		last := 0
		for _, loc := range word.FindAllIndex(b, -1) {
			if isWord(b, loc[0], loc[1]) {
				out.Write(b[last:loc[0]])
				out.WriteString(new)
				last = loc[1]
			}
		}
		out.Write(b[last:])
		return out.Bytes()
	}
}

// isWord says whether b[i:j] is the name as a word to rewrite (old_session
// is; a path, host or module is not).
func isWord(b []byte, i, j int) bool {
	if i > 0 && (isIdent(b[i-1]) || strings.IndexByte("/.-", b[i-1]) >= 0) {
		return false
	}
	return j == len(b) || !(isIdent(b[j]) && b[j] != '_' || b[j] == '/')
}

func isIdent(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func rewriteFile(path string, rewrite func([]byte) []byte) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return false, err
	}
	out := rewrite(b)
	if bytes.Equal(out, b) {
		return false, nil
	}
	if strings.HasSuffix(path, ".go") {
		if out, err = format.Source(out); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(path, out, fi.Mode().Perm())
}
