package ingest

import (
	"errors"
	"reflect"
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

// items returns a body of n items whose text is text.
func items(n int, text string) string {
	its := make([]string, n)
	for i := range its {
		its[i] = `{"text":"` + text + `"}`
	}
	return `{"project":"p","items":[` + strings.Join(its, ",") + `]}`
}

func TestParseRefuses(t *testing.T) {
	okItem := `{"text":"x"}`
	for _, c := range []struct {
		name, body string
		want       []FieldError // in order; the messages are matched by their start
	}{
		{"empty items", `{"project":"p","items":[]}`, []FieldError{{"body.items", "has 0 items"}}},
		{"1001 items", items(1001, "x"), []FieldError{{"body.items", "has 1001 items"}}},
		{"text over 64 KiB", `{"project":"p","items":[` + okItem + `,{"text":"` + strings.Repeat("é", MaxTextBytes/2) + `!"}]}`,
			[]FieldError{{"body.items[1].text", "is 65537 bytes"}}},
		{"bad ingest_id", `{"ingest_id":"ABC","project":"p","items":[` + okItem + `]}`, []FieldError{{"body.ingest_id", "must be 64 lowercase hex"}}},
		{"null ingest_id", `{"ingest_id":null,"project":"p","items":[` + okItem + `]}`, []FieldError{{"body.ingest_id", "must be a string"}}},
		{"unknown member", `{"project":"p","items":[` + okItem + `],"extra":1}`, []FieldError{{"body", `has an unexpected member "extra"`}}},
		{"unknown item member", `{"project":"p","items":[` + okItem + `,{"text":"x","Text":"y"}]}`, []FieldError{{"body.items[1]", `has an unexpected member "Text"`}}},
		{"name of another case", `{"Project":"p","items":[` + okItem + `]}`,
			[]FieldError{{"body", `has an unexpected member "Project"`}, {"body.project", "is required"}}},
		{"missing all", `{}`, []FieldError{{"body.project", "is required"}, {"body.items", "is required"}}},
		{"not an object", `"x"`, []FieldError{{"body", "must be a JSON object"}}},
		{"not JSON", `{"project":`, []FieldError{{"body", "is not valid JSON"}}},
		{"duplicate member", `{"project":"p","project":"q","items":[` + okItem + `]}`, []FieldError{{"body", `has the member "project" twice`}}},
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
		{"33 tags", `{"project":"p","items":[{"text":"x","tags":[` + strings.TrimSuffix(strings.Repeat(`"t",`, 33), ",") + `]}]}`,
			[]FieldError{{"body.items[0].tags", "has 33 tags"}}},
		{"project too long", `{"project":"` + strings.Repeat("p", MaxProjectBytes+1) + `","items":[` + okItem + `]}`, []FieldError{{"body.project", "is 129 bytes"}}},
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
		})
	}
}

func TestParseLimitsAreInclusive(t *testing.T) {
	body := `{"project":"` + strings.Repeat("p", MaxProjectBytes) + `","items":[{"text":"` + strings.Repeat("x", MaxTextBytes) + `"}` +
		strings.Repeat(`,{"text":"y"}`, MaxItems-1) + `]}`
	b, err := Parse([]byte(body))
	if err != nil || len(b.Items) != MaxItems {
		t.Fatalf("a batch at every limit: %d items, %v", len(b.Items), err)
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
