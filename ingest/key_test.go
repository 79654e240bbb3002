package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestKeyKnownVector pins the key of a batch to a digest computed apart
// from this package: of its canonical form written out by hand. The batch
// has what canonicalization must get right: members sorted (an item's
// kind, occurred_at, skill, tags, text), escapes resolved (\u00e9 is é, a
// surrogate pair is the emoji, \/ is /), U+2028 and DEL kept as they are,
// control characters escaped (\n, and \u001f in lowercase hex), '"' and
// '\' escaped, optional members exactly as given (an empty tags is in the
// form, an absent kind is not, occurred_at as written).
func TestKeyKnownVector(t *testing.T) {
	raw := `{ "project" : "caf\u00e9",
	  "items": [ { "text": "line\u2028sep \ud83d\ude00 \u00e9\n\u001F\"\\\/` + "\x7f" + `",
	    "tags": ["\u00e9t\u00e9", "z"], "occurred_at": "2026-01-02T03:04:05+01:00", "skill": "go", "kind": "decision" },
	    { "tags": [], "text": "x" } ] }`
	canonical := "{\"items\":[{\"kind\":\"decision\",\"occurred_at\":\"2026-01-02T03:04:05+01:00\",\"skill\":\"go\",\"tags\":[\"été\",\"z\"]," +
		"\"text\":\"line\u2028sep 😀 é\\n\\u001f\\\"\\\\/\x7f\"},{\"tags\":[],\"text\":\"x\"}],\"project\":\"café\"}"
	// The SHA-256 of canonical, computed by another program (Python's
	// hashlib).
	const want = "077aa68ae8e52f1f0c0105add2c60b17fbc24da018fa88d1c7114ba62a97005a"
	if got := sha(canonical); got != want {
		t.Fatalf("the hand-written canonical form hashes to %s, not %s: the test itself is wrong", got, want)
	}
	if c, err := jcs.Transform([]byte(raw)); err != nil || string(c) != canonical {
		t.Fatalf("jcs.Transform = %s, %v; want the hand-written form", c, err)
	}
	id, fp, err := Key([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if id != want || fp != want {
		t.Fatalf("Key = %s, %s; want both %s (no ingest_id: the id is the fingerprint)", id, fp, want)
	}

	// The same body with an ingest_id: the id is the one given, and the
	// fingerprint is still that of the body without it.
	given := strings.Repeat("ab", 32)
	withID := strings.Replace(raw, `"project" :`, `"ingest_id": "`+given+`", "project":`, 1)
	id, fp, err = Key([]byte(withID))
	if err != nil || id != given || fp != want {
		t.Fatalf("with ingest_id: Key = %s, %s, %v; want %s, %s", id, fp, err, given, want)
	}
}

// TestKeyIgnoresFormOnly: bodies that differ only in spacing, member
// order or escapes have one key; a different value is another key, and so
// is a default given rather than left out.
func TestKeyIgnoresFormOnly(t *testing.T) {
	a := `{"project":"p","items":[{"text":"hello","tags":["x"]}]}`
	b := "{\n  \"items\" : [ { \"tags\":[\"\\u0078\"], \"text\":\"hel\\u006co\" } ],\n  \"project\" : \"p\" }\n"
	ka, _, err := Key([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	if kb, _, _ := Key([]byte(b)); kb != ka {
		t.Errorf("reformatted body: key %s, want %s", kb, ka)
	}
	for _, other := range []string{
		`{"project":"p","items":[{"text":"hello!","tags":["x"]}]}`,
		`{"project":"p","items":[{"text":"hello","tags":["x"],"kind":"note"}]}`,
		`{"project":"p","items":[{"text":"hello","tags":["x"],"occurred_at":"2026-01-02T03:04:05Z"}]}`,
		`{"project":"p","items":[{"text":"hello","tags":["x"],"occurred_at":"2026-01-02T03:04:05.000Z"}]}`,
	} {
		if ko, _, _ := Key([]byte(other)); ko == ka {
			t.Errorf("%s has the key of %s", other, a)
		}
	}
}

// TestKeyRefuses: a body that is not a valid batch has no key.
func TestKeyRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":            `{"project":`,
		"not an object":       `[1,2]`,
		"duplicate member":    `{"project":"a","project":"b","items":[{"text":"x"}]}`,
		"lone surrogate":      `{"project":"\ud800","items":[{"text":"x"}]}`,
		"invalid UTF-8":       "{\"project\":\"\xff\",\"items\":[{\"text\":\"x\"}]}",
		"ingest_id uppercase": `{"ingest_id":"` + strings.Repeat("AB", 32) + `","project":"p","items":[{"text":"x"}]}`,
		"ingest_id null":      `{"ingest_id":null,"project":"p","items":[{"text":"x"}]}`,
		"trailing garbage":    `{"project":"p","items":[{"text":"x"}]} x`,
		"a number":            `{"project":"p","items":[{"text":"x"}],"n":1}`,
	} {
		_, _, err := Key([]byte(body))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: Key err = %v, want a *ValidationError", name, err)
		}
	}
}

// jcsKey is the key as a client computes it, with docs/memory.md's snippet:
// the SHA-256 of jcs.Transform of the body (with and without ingest_id).
func jcsKey(tb testing.TB, raw []byte) (ingestID, fingerprint string) {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("a valid batch does not decode: %v", err)
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		tb.Fatalf("jcs refuses a body Parse accepts: %v\n%q", err, raw)
	}
	fingerprint = sha(string(canon))
	if id, ok := m["ingest_id"]; ok {
		delete(m, "ingest_id")
		rest, _ := json.Marshal(m) // encoding/json may escape differently: jcs writes it one way
		if canon, err = jcs.Transform(rest); err != nil {
			tb.Fatal(err)
		}
		var s string
		_ = json.Unmarshal(id, &s)
		return s, sha(string(canon))
	}
	return fingerprint, fingerprint
}

// keySeeds are valid batches that exercise the canonical form: escapes
// of every kind, non-ASCII, members in any order, spacing, optional
// members given, left out and given empty.
var keySeeds = []string{
	`{"project":"p","items":[{"text":"x"}]}`,
	" {\n\t\"items\" : [ {\"text\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0001\\u001F\\u007f\\u0080\"} ] ,\r\n \"project\":\"\\u00e9\\u00E9\" } ",
	`{"items":[{"tags":[],"text":"t","kind":"k","skill":"s","occurred_at":"2026-01-02T03:04:05.123456789-07:00"}],"project":"p","ingest_id":"` + strings.Repeat("0f", 32) + `"}`,
	`{"ingest_id":"` + strings.Repeat("a", 64) + `","project":"日本","items":[{"text":"😀 \ud83d\ude00 \u2028\u2029 ﬁ","tags":["é","\u00e9x"]},{"text":"<script>&amp;"}]}`,
	`{"project":"p","items":[{"text":"x","tags":["a","b","c"]},{"text":"y","occurred_at":"2026-01-02T03:04:05Z","kind":"note"}]}`,
	`{"project":"\u0070","items":[{"\u0074ext":"escaped name","s\u006bill":"go"}]}`,
}

// TestKeyIsJCS holds Key to jcs on the seeds (FuzzKey does on more).
func TestKeyIsJCS(t *testing.T) {
	for _, s := range keySeeds {
		checkKey(t, []byte(s), true)
	}
}

// checkKey checks what Key and Parse say of raw: for a valid batch, the
// key jcs gives and the values encoding/json reads; for any other body,
// a *ValidationError whose messages hold no byte of the body beyond what
// the rules say. mustBeValid fails a seed that is not a valid batch.
func checkKey(t *testing.T, raw []byte, mustBeValid bool) {
	t.Helper()
	id, fp, err := Key(raw)
	if err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Errors) == 0 {
			t.Fatalf("Key(%q) = %v, want a *ValidationError", raw, err)
		}
		if mustBeValid {
			t.Fatalf("a seed is refused: %v\n%q", err, raw)
		}
		for _, fe := range ve.Errors {
			// Places a batch declares, and messages that quote nothing.
			if !locationRE.MatchString(fe.Location) || strings.ContainsAny(fe.Message, `"<>`) || len(fe.Message) > 200 {
				t.Fatalf("Key(%q): an error %+v names or quotes what the client wrote", raw, fe)
			}
		}
		return
	}
	wantID, wantFP := jcsKey(t, raw)
	if id != wantID || fp != wantFP {
		t.Fatalf("Key(%q) = %s, %s; jcs gives %s, %s", raw, id, fp, wantID, wantFP)
	}
	// What Parse kept is what encoding/json reads.
	b, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Project string
		Items   []struct {
			Text, Kind, Skill string
			Tags              []string
		}
	}
	if err := json.Unmarshal(raw, &j); err != nil || j.Project != b.Project || len(j.Items) != len(b.Items) {
		t.Fatalf("encoding/json reads %+v, %v; Parse %+v", j, err, b)
	}
	for i, it := range j.Items {
		got := b.Items[i]
		if it.Kind == "" {
			it.Kind = DefaultKind
		}
		if it.Text != got.Text || it.Kind != got.Kind || it.Skill != got.Skill || fmt.Sprint(it.Tags) != fmt.Sprint(got.Tags) {
			t.Fatalf("item %d: encoding/json reads %+v, Parse %+v", i, it, got)
		}
	}
}

// locationRE is every place a batch has.
var locationRE = regexp.MustCompile(`^body(\.(ingest_id|project|items)|\.items\[\d+\](\.(text|kind|skill|occurred_at|tags(\[\d+\])?))?)?$`)

// FuzzKey holds Key to jcs on every valid batch the fuzzer finds (go test
// -fuzz FuzzKey ./ingest/; the seeds run with every go test).
func FuzzKey(f *testing.F) {
	for _, s := range keySeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"project":"\ud800","items":[{"text":"x"}]}`))
	f.Add([]byte(`{"project":"p","items":[{"text":"x","x":1}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkKey(t, raw, false)
		if _, err := Parse(raw); err == nil && !utf8.Valid(raw) {
			t.Fatalf("Parse accepts a body that is not UTF-8: %q", raw)
		}
	})
}

// escapeAll writes s as a JSON string with every character escaped as
// \uXXXX (a surrogate pair beyond U+FFFF), in upper or lower case hex.
func escapeAll(s string, upper bool) string {
	var b strings.Builder
	b.WriteByte('"')
	format := "\\u%04x"
	if upper {
		format = "\\u%04X"
	}
	for _, r := range s {
		if r > 0xffff {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, format+format, hi, lo)
			continue
		}
		fmt.Fprintf(&b, format, r)
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzKeyOfStrings builds valid batches around the strings the fuzzer
// gives, written by encoding/json (which escapes <, >, & and U+2028) and
// with every character escaped, and holds Key to jcs on them: the
// canonical form's escapes are where canonicalizers differ.
func FuzzKeyOfStrings(f *testing.F) {
	f.Add("p", "hello", "go", "t", false)
	f.Add("café", "a\"b\\c\n\t\x01\x1f\x7f<&> \u2028😀", "日本", "é", true)
	f.Fuzz(func(t *testing.T, project, text, skill, tag string, upper bool) {
		if !utf8.ValidString(project + text + skill + tag) {
			return // encoding/json would write U+FFFD: another batch
		}
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		for _, raw := range []string{
			`{"project":` + q(project) + `,"items":[{"text":` + q(text) + `,"skill":` + q(skill) + `,"tags":[` + q(tag) + `]}]}`,
			`{"items":[{"tags":[` + escapeAll(tag, upper) + `],"text":` + escapeAll(text, upper) + `,"skill":` + escapeAll(skill, upper) + `}],"project":` + escapeAll(project, !upper) + `}`,
		} {
			checkKey(t, []byte(raw), false)
		}
	})
}
