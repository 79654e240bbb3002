package ingest

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Words returns the words of s as the full-text index and queries see
// them, in order, repeats included. A word is a run of letters, digits
// and combining marks; anything else separates words, so nothing in a
// query is syntax and "key.go" is the two words key and go. Each word is
// written one way: its Unicode compatibility composition (NFKC), in lower
// case. So "Café", "CAFE\u0301" and "café" are one word, and so are the
// full-width "ＡＢＣ" and "abc"; case and the spelling of accents never
// decide whether an item is found. The index keeps each item's Words and
// a query looks for its own, so both databases find the same items.
func Words(s string) []string {
	var words []string
	eachWord(s, func(_, _ int, w string) bool {
		words = append(words, w)
		return true
	})
	return words
}

// eachWord calls f with each word of s (see [Words]): its place in s,
// s[start:end], and the word as written in the index. It stops when f
// returns false.
func eachWord(s string, f func(start, end int, word string) bool) {
	start := -1
	for i := 0; i < len(s); {
		var in bool
		size := 1
		if c := s[i]; c < utf8.RuneSelf {
			in = asciiWord[c]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			in = r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r))
		}
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			if !f(start, i, fold(s[start:i])) {
				return
			}
			start = -1
		}
		i += size
	}
	if start >= 0 {
		f(start, len(s), fold(s[start:]))
	}
}

// asciiWord says which ASCII bytes belong in a word: letters and digits.
// A word's other characters are letters, digits and combining marks
// beyond ASCII (so "e\u0301" is one word, as é is).
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// fold writes a word one way: NFKC, then lower case. A word of ASCII
// letters and digits, the most common, costs one scan and, if it has
// upper case, one copy.
func fold(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return strings.ToLower(norm.NFKC.String(w))
		}
	}
	return strings.ToLower(w)
}
