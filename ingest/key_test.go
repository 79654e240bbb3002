package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestKeyKnownVector pins the key of a body to a digest computed apart
// from this package: of its canonical form written out by hand. The body
// has what canonicalization must get right: numbers in ECMAScript's form
// (1e21 is 1e+21, -0 is 0, 1E-7 is 1e-7, 1.0 is 1), escapes resolved (\u00e9
// is é, a surrogate pair is the emoji), U+2028 kept as it is, control
// characters escaped in lowercase hex, and members sorted by UTF-16 code
// units (😀, a surrogate pair from 0xD83D, sorts before U+FB01).
func TestKeyKnownVector(t *testing.T) {
	raw := `{ "project" : "caf\u00e9",
	  "items": [ { "text": "line\u2028sep \ud83d\ude00 \u00e9\n\u001F",
	    "o": {"\ufb01": 1.0, "😀": 2, "é": 3e0},
	    "n": [1e21, 0.1, -0, 1E-7] } ],
	  "a": "\u0041" }`
	canonical := "{\"a\":\"A\",\"items\":[{\"n\":[1e+21,0.1,0,1e-7],\"o\":{\"é\":3,\"😀\":2,\"ﬁ\":1},\"text\":\"line\u2028sep 😀 é\\n\\u001f\"}],\"project\":\"café\"}"
	// The SHA-256 of canonical, computed by another program.
	const want = "7ca4665f58313d87b04d7499360878e74baa19799324ad44683021eb6ee149f3"
	if got := sha(canonical); got != want {
		t.Fatalf("the hand-written canonical form hashes to %s, not %s: the test itself is wrong", got, want)
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
	withID := strings.Replace(raw, `"a":`, `"ingest_id": "`+given+`", "a":`, 1)
	id, fp, err = Key([]byte(withID))
	if err != nil || id != given || fp != want {
		t.Fatalf("with ingest_id: Key = %s, %s, %v; want %s, %s", id, fp, err, given, want)
	}
}

// TestKeyIgnoresFormOnly: bodies that differ only in spacing, member
// order or escapes have one key; a different value is another key.
func TestKeyIgnoresFormOnly(t *testing.T) {
	a := `{"project":"p","items":[{"text":"hello","tags":["x"]}]}`
	b := "{\n  \"items\" : [ { \"tags\":[\"\\u0078\"], \"text\":\"hel\\u006co\" } ],\n  \"project\" : \"p\" }\n"
	c := `{"project":"p","items":[{"text":"hello!","tags":["x"]}]}`
	ka, _, err := Key([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	if kb, _, _ := Key([]byte(b)); kb != ka {
		t.Errorf("reformatted body: key %s, want %s", kb, ka)
	}
	if kc, _, _ := Key([]byte(c)); kc == ka {
		t.Error("a different text has the same key")
	}
}

func TestKeyRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":              `{"project":`,
		"not an object":         `[1,2]`,
		"duplicate member":      `{"project":"a","project":"b","items":[]}`,
		"lone surrogate":        `{"project":"\ud800","items":[]}`,
		"invalid UTF-8":         "{\"project\":\"\xff\",\"items\":[]}",
		"ingest_id uppercase":   `{"ingest_id":"` + strings.Repeat("AB", 32) + `"}`,
		"ingest_id short":       `{"ingest_id":"abc"}`,
		"ingest_id null":        `{"ingest_id":null}`,
		"ingest_id number":      `{"ingest_id":12}`,
		"trailing garbage":      `{"project":"p"} x`,
		"ingest_id 65 hex":      `{"ingest_id":"` + strings.Repeat("a", 65) + `"}`,
		"ingest_id non-hex":     `{"ingest_id":"` + strings.Repeat("g", 64) + `"}`,
		"ingest_id in an array": `{"ingest_id":["` + strings.Repeat("a", 64) + `"]}`,
	} {
		_, _, err := Key([]byte(body))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: Key err = %v, want a *ValidationError", name, err)
		}
	}
}

// TestCutMember holds cutMember to the slow, obvious way: decode the
// canonical object, delete the member, canonicalize again.
func TestCutMember(t *testing.T) {
	id := `"` + strings.Repeat("0", 64) + `"`
	for _, body := range []string{
		`{"ingest_id":` + id + `}`,
		`{"ingest_id":` + id + `,"items":[]}`,
		`{"a":1,"ingest_id":` + id + `}`,
		`{"a":{"ingest_id":"x"},"ingest_id":` + id + `,"z":[{"ingest_id":1}]}`,
		`{"a":"\",\"ingest_id\":\"","ingest_id":` + id + `,"b":"}]{["}`,
		`{"a":"\\","ingest_id":` + id + `,"b":"\\\""}`,
		`{"a":[[],{},[{}]],"ingest_id":` + id + `,"items":[{"ingest_id":` + id + `}]}`,
		`{"a":{"ingest_id":` + id + `}}`, // only nested: not found
		`{"ingest_idx":1,"iingest_id":2}`,
	} {
		canon, err := jcs.Transform([]byte(body))
		if err != nil {
			t.Fatal(body, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(canon, &m); err != nil {
			t.Fatal(err)
		}
		wantValue, wantFound := m["ingest_id"]
		delete(m, "ingest_id")
		b, _ := json.Marshal(m)
		want, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		value, rest, found := cutMember(canon, `"ingest_id"`)
		if found != wantFound || string(value) != string(wantValue) || string(rest) != string(want) {
			t.Errorf("cutMember(%s) = %s, %s, %v; want %s, %s, %v", canon, value, rest, found, wantValue, want, wantFound)
		}
	}
}
