package ingest

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	raw := `{"ingest_id":"` + strings.Repeat("a1", 32) + `","project":"brain","items":[
		{"text":"first"},
		{"text":"second","kind":"decision","skill":"go","tags":["db","sql"],"occurred_at":"2026-03-04T05:06:07.123456+01:00"}]}`
	b, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := Batch{IngestID: strings.Repeat("a1", 32), Project: "brain", Items: []Item{
		{Text: "first", Kind: DefaultKind, Tags: []string{}},
		{Text: "second", Kind: "decision", Skill: "go", Tags: []string{"db", "sql"}, OccurredAt: time.Date(2026, 3, 4, 4, 6, 7, 123e6, time.UTC)},
	}}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("Parse =\n%+v\nwant\n%+v", b, want)
	}
}

// occurred_at is read as RFC 3339 has it: T and Z in either case, and a
// leap second as the last millisecond of the second before it.
func TestParseOccurredAt(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2024-01-01t02:03:04.5z":                       time.Date(2024, 1, 1, 2, 3, 4, 500e6, time.UTC),
		"2016-12-31T23:59:60Z":                         time.Date(2016, 12, 31, 23, 59, 59, 999e6, time.UTC),
		"2016-12-31t18:59:60.25-05:00":                 time.Date(2016, 12, 31, 23, 59, 59, 999e6, time.UTC),
		"2024-01-01T00:00:00.123456789123456789+01:00": time.Date(2023, 12, 31, 23, 0, 0, 123e6, time.UTC),
	} {
		b, err := Parse([]byte(`{"project":"p","items":[{"text":"x","occurred_at":"` + in + `"}]}`))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := b.Items[0].OccurredAt; !got.Equal(want) {
			t.Errorf("%s: %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{"2016-12-31T23:59:61Z", "2016-12-31T23:60:00Z", "2016-12-31x23:59:59Z", "2016-12-31T23:59:59", "2016-12-31T23:59:60y"} {
		if _, err := Parse([]byte(`{"project":"p","items":[{"text":"x","occurred_at":"` + in + `"}]}`)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// items returns a body of n items whose text is text.
func items(n int, text string) string {
	its := make([]string, n)
	for i := range its {
		its[i] = `{"text":"` + text + `"}`
	}
	return `{"project":"p","items":[` + strings.Join(its, ",") + `]}`
}

// tags is a JSON list of n distinct tags, without its brackets.
func tags(n int) string {
	ts := make([]string, n)
	for i := range ts {
		ts[i] = fmt.Sprintf(`"t%d"`, i)
	}
	return strings.Join(ts, ",")
}

func TestParseRefuses(t *testing.T) {
	okItem := `{"text":"x"}`
	for _, c := range []struct {
		name, body string
		want       []FieldError // in order; the messages are matched by their start
	}{
		{"empty items", `{"project":"p","items":[]}`, []FieldError{{"body.items", "has no items"}}},
		{"1001 items", items(1001, "x"), []FieldError{{"body.items", "has more than 1000 items"}}},
		{"text over 65536 characters", `{"project":"p","items":[` + okItem + `,{"text":"` + strings.Repeat("é", MaxTextChars) + `!"}]}`,
			[]FieldError{{"body.items[1].text", "is 65537 characters"}}},
		{"text over 65536 characters, escaped", `{"project":"p","items":[{"text":"` + strings.Repeat(`\ud83d\ude00`, MaxTextChars) + `!"}]}`,
			[]FieldError{{"body.items[0].text", "is 65537 characters"}}},
		{"bad ingest_id", `{"ingest_id":"ABC","project":"p","items":[` + okItem + `]}`, []FieldError{{"body.ingest_id", "must be 64 lowercase hex"}}},
		{"null ingest_id", `{"ingest_id":null,"project":"p","items":[` + okItem + `]}`, []FieldError{{"body.ingest_id", "must be a string"}}},
		{"unknown member", `{"project":"p","items":[` + okItem + `],"extra":1}`, []FieldError{{"body", "has a member that is not one of ingest_id, project, items"}}},
		{"unknown item member", `{"project":"p","items":[` + okItem + `,{"text":"x","Text":"y"}]}`,
			[]FieldError{{"body.items[1]", "has a member that is not one of text, kind, skill, tags, occurred_at"}}},
		{"name of another case", `{"Project":"p","items":[` + okItem + `]}`, []FieldError{{"body", "has a member that is not one of"}}},
		{"a name that is markup", `{"project":"p","items":[{"text":"x","<script>alert(1)</script>":1}]}`, []FieldError{{"body.items[0]", "has a member that is not one of"}}},
		{"problems before an unknown member are kept", `{"project":"","items":[{"text":""},{"text":"x","junk":[1,2,3]},{"text":""}]}`,
			[]FieldError{{"body.project", "must not be empty"}, {"body.items[0].text", "must not be empty"}, {"body.items[1]", "has a member that is not one of"}}},
		{"missing all", `{}`, []FieldError{{"body.project", "is required"}, {"body.items", "is required"}}},
		{"not an object", `"x"`, []FieldError{{"body", "must be a JSON object"}}},
		{"not JSON", `{"project":`, []FieldError{{"body", "is not valid JSON: it ends too soon (at byte 11)"}}},
		{"not JSON inside", `{"project":"p","items":[{"text":"x"} {"text":"y"}]}`, []FieldError{{"body", "is not valid JSON: a character that JSON does not allow there (at byte 37)"}}},
		{"empty", ``, []FieldError{{"body", "is empty"}}},
		{"trailing", `{"project":"p","items":[` + okItem + `]} {}`, []FieldError{{"body", "has more after its closing brace"}}},
		{"duplicate member", `{"project":"p","project":"q","items":[` + okItem + `]}`, []FieldError{{"body.project", "is given twice"}}},
		{"duplicate member, escaped", `{"project":"p","items":[{"text":"x","\u0074ext":"y"}]}`, []FieldError{{"body.items[0].text", "is given twice"}}},
		{"lone surrogate", `{"project":"p","items":[{"text":"\ud800"}]}`, []FieldError{{"body", `holds a \u escape of half a UTF-16 surrogate pair`}}},
		{"lone low surrogate", `{"project":"p","items":[{"text":"\udc00\ud800"}]}`, []FieldError{{"body", `holds a \u escape of half a UTF-16 surrogate pair`}}},
		{"high surrogate then another escape", `{"project":"p","items":[{"text":"\ud800\u0041"}]}`, []FieldError{{"body", `holds a \u escape of half a UTF-16 surrogate pair`}}},
		{"not UTF-8", "{\"project\":\"p\xff\",\"items\":[" + okItem + "]}", []FieldError{{"body", "is not valid UTF-8 (at byte 13)"}}},
		{"a raw control character", "{\"project\":\"p\nq\",\"items\":[" + okItem + "]}", []FieldError{{"body", "is not valid JSON: a control character"}}},
		{"a bad escape", `{"project":"p\x","items":[` + okItem + `]}`, []FieldError{{"body", "is not valid JSON: a malformed escape"}}},
		{"deep nesting", `{"project":"p","items":[{"text":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}]}`,
			[]FieldError{{"body.items[0].text", "must be a string"}, {"body", "nests arrays and objects deeper than a batch ever does"}}},
		{"a wrong type is passed over", `{"project":{"a":[1,{"b":null}]},"items":[{"text":true,"tags":"a"}]}`,
			[]FieldError{{"body.project", "must be a string"}, {"body.items[0].text", "must be a string"}, {"body.items[0].tags", "must be an array of strings"}}},
		{"huge name", `{"project":"p","items":[` + okItem + `],"` + strings.Repeat("n", 1<<20) + `":1}`, []FieldError{{"body", "has a member that is not one of"}}},
		{"huge project", `{"project":"` + strings.Repeat(`\u0070`, 1<<16) + `","items":[` + okItem + `]}`, []FieldError{{"body.project", "is 65536 characters; the most is 128"}}},
		{"occurred_at too long", `{"project":"p","items":[{"text":"x","occurred_at":"` + strings.Repeat("2", 100) + `"}]}`, []FieldError{{"body.items[0].occurred_at", "is 100 characters; the most is 64"}}},
		{"item not an object", `{"project":"p","items":[7]}`, []FieldError{{"body.items[0]", "must be a JSON object"}}},
		{"many problems, each in place", `{"project":" p","items":[` + okItem + `,{"kind":"","tags":["a","a"],"occurred_at":"yesterday"},{"text":"   ","skill":null}]}`,
			[]FieldError{
				{"body.project", "must not start or end with white space"},
				{"body.items[1].kind", "must not be empty"},
				{"body.items[1].tags[1]", "repeats body.items[1].tags[0]"},
				{"body.items[1].occurred_at", "must be an RFC 3339"},
				{"body.items[1].text", "is required"},
				{"body.items[2].text", "must not be empty"},
				{"body.items[2].skill", "must be a string"},
			}},
		{"NUL in text", `{"project":"p","items":[{"text":"a\u0000b"}]}`, []FieldError{{"body.items[0].text", "must not contain U+0000"}}},
		{"control character in a tag", `{"project":"p","items":[{"text":"x","tags":["a\tb"]}]}`, []FieldError{{"body.items[0].tags[0]", "must not contain control"}}},
		{"33 tags", `{"project":"p","items":[{"text":"x","tags":[` + tags(33) + `]}]}`,
			[]FieldError{{"body.items[0].tags", "has more than 32 tags"}}},
		{"repeated tag after a bad one", `{"project":"p","items":[{"text":"x","tags":["a","","b","a"]}]}`,
			[]FieldError{{"body.items[0].tags[1]", "must not be empty"}, {"body.items[0].tags[3]", "repeats body.items[0].tags[0]"}}},
		{"project too long", `{"project":"` + strings.Repeat("p", MaxProjectChars+1) + `","items":[` + okItem + `]}`, []FieldError{{"body.project", "is 129 characters"}}},
		{"body over 8 MiB", items(MaxItems, strings.Repeat("x", MaxBodyBytes/MaxItems)), []FieldError{{"body", "is 8"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.body))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if len(ve.Errors) != len(c.want) {
				t.Fatalf("errors = %+v, want %d like %+v", ve.Errors, len(c.want), c.want)
			}
			for i, w := range c.want {
				if g := ve.Errors[i]; g.Location != w.Location || !strings.HasPrefix(g.Message, w.Message) {
					t.Errorf("error %d = %+v, want %s: %s...", i, g, w.Location, w.Message)
				}
			}
			// Bytes that are no JSON text at all are Malformed (a 400);
			// JSON that no batch can be is not (a 422).
			notJSON := false
			for _, m := range []string{"is not valid JSON", "is not valid UTF-8", "is empty", "has more after"} {
				notJSON = notJSON || strings.HasPrefix(c.want[0].Message, m)
			}
			if ve.Malformed != notJSON {
				t.Errorf("Malformed = %v, want %v", ve.Malformed, notJSON)
			}
		})
	}
}

func TestParseLimitsAreInclusive(t *testing.T) {
	body := `{"project":"` + strings.Repeat("p", MaxProjectChars) + `","items":[{"text":"` + strings.Repeat("x", MaxTextChars) + `"}` +
		strings.Repeat(`,{"text":"y"}`, MaxItems-1) + `]}`
	b, err := Parse([]byte(body))
	if err != nil || len(b.Items) != MaxItems {
		t.Fatalf("a batch at every limit: %d items, %v", len(b.Items), err)
	}
	// Lengths are characters, as the spec's maxLength counts them: two
	// bytes each here, four in a tag.
	wide := `{"project":"` + strings.Repeat("é", MaxProjectChars) + `","items":[{"text":"` + strings.Repeat("é", MaxTextChars) +
		`","kind":"` + strings.Repeat("é", MaxKindChars) + `","skill":"` + strings.Repeat("é", MaxSkillChars) +
		`","tags":["` + strings.Repeat("😀", MaxTagChars) + `"]}]}`
	if _, err := Parse([]byte(wide)); err != nil {
		t.Fatalf("a batch at every limit, in characters of more than a byte: %v", err)
	}
}

func TestValidationErrorIsCapped(t *testing.T) {
	_, err := Parse([]byte(items(500, "")))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("500 empty texts: err = %v, want a *ValidationError", err)
	}
	if len(ve.Errors) != MaxFieldErrors {
		t.Fatalf("500 empty texts: %d errors, want %d", len(ve.Errors), MaxFieldErrors)
	}
}

// TestParseCostIsBounded: what Parse allocates to refuse a body grows
// with what a batch can hold, never with the body's shape. Each body is
// about 8 MiB of JSON that encoding/json and an RFC 8785 tree would build
// millions of values from (jcs.Transform took 3.5 s and 668 MB for the
// first); Parse stops at the first thing no batch can be.
func TestParseCostIsBounded(t *testing.T) {
	const size = MaxBodyBytes - 64
	fill := func(prefix, unit, suffix string) []byte {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return []byte(prefix + strings.TrimSuffix(strings.Repeat(unit, n), ",") + suffix)
	}
	valid := items(MaxItems, strings.Repeat("x", size/MaxItems-20))
	for _, c := range []struct {
		name string
		body []byte
		max  uint64 // bytes Parse may allocate
	}{
		{"tiny values in an unknown member", fill(`{"project":"p","items":[{"text":"x"}],"junk":[`, "0,", "]}"), 64 << 10},
		{"tiny values as items", fill(`{"project":"p","items":[`, "0,", "]}"), 512 << 10},
		{"empty objects as items", fill(`{"project":"p","items":[`, "{},", "]}"), 512 << 10},
		{"tiny values as tags", fill(`{"project":"p","items":[{"text":"x","tags":[`, "0,", "]}]}"), 64 << 10},
		{"deep nesting", fill(`{"project":"p","items":[{"text":`, "[", ""), 64 << 10},
		{"a huge member name", fill(`{"project":"p","items":[{"text":"x"}],"`, "a", `":0}`), 64 << 10},
		{"escapes in a text", fill(`{"project":"p","items":[{"text":"`, `\u00e9`, `"}]}`), 64 << 10},
		{"a valid batch", []byte(valid), uint64(len(valid)) * 5 / 4}, // its strings, in size classes
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Parse(c.body)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > c.max {
				t.Errorf("Parse of %d bytes allocated %d bytes, want at most %d (%v)", len(c.body), got, c.max, err)
			}
			if (err == nil) != (c.name == "a valid batch") {
				t.Errorf("Parse = %v", err)
			}
		})
	}
}
