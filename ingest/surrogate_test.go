package ingest

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanSeeds are JSON texts and near misses for the scanner.
var scanSeeds = []string{
	`{}`, `[]`, ` {"a" : [1, -0.5e+10, true, false, null, "s"]} `, `"\u00e9\ud83d\ude00\n\/"`,
	`0`, `-0`, `1.5E-3`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`,
	`"\x"`, `"\u12"`, `"\u12G4"`, `"` + "\x01" + `"`, `"\ud800"`, `"\udc00"`, `"\ud800\udc00"`, `"\ud800\u0041"`,
	`[[[[[[[[[[]]]]]]]]]]`, `nul`, `truex`, `[1 2]`, `{"a":1 "b":2}`, "\xff", `"` + "\xc3\xa9" + `"`, `"` + "\xed\xa0\x80" + `"`,
	"[1]\x00", ` `, ``,
}

// FuzzScanner holds the scanner to encoding/json on what is JSON. The two
// differ only where the scanner is stricter, by design: a string that is
// not UTF-8, a lone surrogate escape (both refused by RFC 8785), and
// nesting deeper than the scanner was told to allow.
func FuzzScanner(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, why := validJSON(data, 10000)
		want := json.Valid(data)
		switch {
		case got && !want:
			t.Fatalf("the scanner accepts %q, which encoding/json refuses", data)
		case !got && want && why != failSurrogate && why != failUTF8:
			t.Fatalf("the scanner refuses %q (%s), which encoding/json accepts", data, why.message())
		case !got && want && why == failUTF8 && utf8.Valid(data):
			t.Fatalf("the scanner calls %q not UTF-8", data)
		}
	})
}

func TestScannerRefuses(t *testing.T) {
	for _, c := range []struct {
		data string
		why  failure
		at   int
	}{
		{`[1,]`, failChar, 3},
		{`[1`, failEnd, 2},
		{`"ab`, failEnd, 3},
		{`"a` + "\t" + `"`, failControl, 2},
		{`"a\qb"`, failEscape, 2},
		{`"a\ud800b"`, failSurrogate, 2},
		{`"a\udc00"`, failSurrogate, 2},
		{`"a` + "\xff" + `"`, failUTF8, 2},
		{strings.Repeat("[", 17) + strings.Repeat("]", 17), failDepth, 16},
		{`[1] 2`, failChar, 4},
	} {
		got, why := validJSON([]byte(c.data), 16)
		s := scanner{data: []byte(c.data), maxDepth: 16}
		s.skip(1)
		s.end()
		if got || why != c.why || s.failedAt != c.at {
			t.Errorf("%q: %v, %q at %d; want %q at %d", c.data, got, why.message(), s.failedAt, c.why.message(), c.at)
		}
	}
	if ok, _ := validJSON([]byte(strings.Repeat("[", 16)+strings.Repeat("]", 16)), 16); !ok {
		t.Error("16 deep is refused at a depth of 16")
	}
}

// unescape and valueChars agree with encoding/json on every string the
// scanner accepts.
func TestUnescape(t *testing.T) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0000\u001f\u007F\u00e9\u20AC\ud83d\ude00"`, `"é😀` + "\x7f" + `"`} {
		sc := scanner{data: []byte(s), maxDepth: 1}
		raw, escaped, good := sc.str()
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil || !good {
			t.Fatalf("%s: %v %v", s, err, good)
		}
		got := string(raw)
		if escaped {
			got = unescape(raw)
		}
		if n := utf8.RuneCountInString(want); got != want || valueChars(raw, escaped) != n {
			t.Errorf("%s: unescape %q, valueChars %d; want %q, %d", s, got, valueChars(raw, escaped), want, n)
		}
	}
}

// validJSON reports whether data is one JSON value and nothing more, as
// the scanner reads it, nested at most maxDepth deep; and why not. The tests
// hold the scanner to encoding/json through it.
func validJSON(data []byte, maxDepth int) (bool, failure) {
	s := scanner{data: data, maxDepth: maxDepth}
	good := s.skip(1) && s.end()
	return good, s.failed
}

// end reads white space to the end of the data, which must come next.
func (s *scanner) end() bool {
	if s.failed != ok {
		return false
	}
	if s.peek(); s.pos < len(s.data) {
		return s.fail(failChar)
	}
	return true
}
