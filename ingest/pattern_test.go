package ingest

import (
	"regexp"
	"testing"
	"unicode/utf8"
)

// The patterns the spec states for a text and a name allow exactly what
// textProblem and labelProblem allow (lengths aside), on every character
// where the rules could part: each alone, at either end, inside, and
// doubled, for every code point to U+30FF (every control and white space
// character is there) and some beyond.
func TestPatternsAreTheChecks(t *testing.T) {
	text, label := regexp.MustCompile(textPattern), regexp.MustCompile(labelPattern)
	runes := []rune{0xfeff, 0xfffd, 0x10000, 0x1f600, 0x10ffff}
	for r := rune(0); r < 0x3100; r++ {
		runes = append(runes, r)
	}
	for _, r := range runes {
		c := string(r)
		for _, s := range []string{c, "a" + c, c + "a", "a" + c + "b", c + c, " " + c, c + " "} {
			n := utf8.RuneCountInString(s)
			if got, want := text.MatchString(s), textProblem(s, n) == ""; got != want {
				t.Errorf("text %+q: textPattern matches %v, textProblem allows %v", s, got, want)
			}
			if got, want := label.MatchString(s), labelProblem(s, n, 100) == ""; got != want {
				t.Errorf("name %+q: labelPattern matches %v, labelProblem allows %v", s, got, want)
			}
		}
	}
}
