// Package loadtool is what the load tools of this module share: building
// brain, the -env flag, and how a run reports itself.
package loadtool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvList is a repeatable -env KEY=VALUE flag.
type EnvList []string

// String joins the values.
func (e *EnvList) String() string { return strings.Join(*e, " ") }

// Set adds one KEY=VALUE.
func (e *EnvList) Set(v string) error {
	if !strings.Contains(v, "=") {
		return errors.New("want KEY=VALUE")
	}
	*e = append(*e, v)
	return nil
}

// A Binary is one brain binary to measure: a name for the report, and
// its path.
type Binary struct{ Name, Path string }

// Binaries is a repeatable -bin NAME=PATH flag.
type Binaries []Binary

// String lists the binaries.
func (b *Binaries) String() string { return fmt.Sprint(*b) }

// Set adds one NAME=PATH.
func (b *Binaries) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return errors.New("want NAME=PATH, such as before=/tmp/brain-before")
	}
	*b = append(*b, Binary{name, path})
	return nil
}

// RepoRoot is the repository that holds the working directory: the
// nearest directory above it with cmd/brain.
func RepoRoot(tool string) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "cmd", "brain", "main.go")); err == nil {
			return root, nil
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("%s: no cmd/brain above the working directory; run it inside the repository, or pass -bin", tool)
		}
		root = parent
	}
}

// Build builds cmd/brain of the repository into dir/brain, with the
// extra go build flags given, and returns the binary's path.
func Build(tool, dir string, flags ...string) (string, error) {
	root, err := RepoRoot(tool)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "brain")
	args := append(append([]string{"build", "-o", out}, flags...), "./cmd/brain")
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: go build ./cmd/brain: %w", tool, err)
	}
	return out, nil
}

// Verdict is PASS or FAIL.
func Verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// Command is how the tool was run: under go run, as the go run command.
func Command(tool string) string {
	args := strings.Join(os.Args[1:], " ")
	if strings.Contains(os.Args[0], "go-build") {
		return strings.TrimSpace("cd bench && go run ./" + tool + " " + args)
	}
	return strings.TrimSpace(os.Args[0] + " " + args)
}

// NumCPU is how many CPUs the machine has (not GOMAXPROCS).
func NumCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return bytes.Count(b, []byte("\nprocessor")) + 1
}
