package product

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameDerivations keeps the one hand-written derivation honest: Go
// cannot upper-case a constant, so EnvPrefix is written out, and make
// rename rewrites both.
func TestNameDerivations(t *testing.T) {
	if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(Name) {
		t.Fatalf("Name %q: want a lower-case letter, then letters, digits or underscores", Name)
	}
	if want := strings.ToUpper(Name) + "_"; EnvPrefix != want {
		t.Fatalf("EnvPrefix = %q, want %q (Name upper cased, then _)", EnvPrefix, want)
	}
}
