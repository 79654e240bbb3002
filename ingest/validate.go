package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A FieldError locates one problem in a request.
type FieldError struct {
	// Location is where the problem is: "body", a member of it such as
	// "body.items[3].text", or a parameter such as "query.limit". An
	// unexpected member is reported at the object that holds it.
	Location string
	Message  string // what is wrong there
}

// A ValidationError lists what is wrong with a request, each problem at
// its place. Callers answer it with 422 and the list.
type ValidationError struct {
	Errors []FieldError // at least one, at most MaxFieldErrors
}

// MaxFieldErrors bounds a [ValidationError]'s list: a batch of a thousand
// bad items is told of its first hundred problems.
const MaxFieldErrors = 100

// Error lists the problems on one line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("ingest: invalid request: ")
	for i, f := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Location + " " + f.Message)
	}
	return b.String()
}

// add records a problem, up to MaxFieldErrors.
func (e *ValidationError) add(location, message string) {
	if len(e.Errors) < MaxFieldErrors {
		e.Errors = append(e.Errors, FieldError{Location: location, Message: message})
	}
}

// err is e when it lists a problem, else nil.
func (e *ValidationError) err() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e
}

// invalid is a ValidationError of one problem.
func invalid(location, message string) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Location: location, Message: message}}}
}

// Parse reads and checks the body of an ingest request:
//
//	{"ingest_id": "<64 hex>", "project": "...", "items": [{"text": "...",
//	  "kind": "...", "skill": "...", "tags": ["..."], "occurred_at": "<RFC 3339>"}]}
//
// ingest_id is optional; so are each item's kind, skill, tags and
// occurred_at. A member may not be null (leave it out instead), nor may
// the body or an item have a member not shown above: a misspelt name
// would otherwise be dropped without a word. Member names are matched
// exactly, case included. Every problem found, up to MaxFieldErrors, is
// in the returned [*ValidationError].
func Parse(raw []byte) (Batch, error) {
	if len(raw) > MaxBodyBytes {
		return Batch{}, invalid("body", fmt.Sprintf("is %d bytes, more than %d (8 MiB): split it into smaller batches", len(raw), MaxBodyBytes))
	}
	if !utf8.Valid(raw) {
		return Batch{}, invalid("body", "is not valid UTF-8")
	}
	top, err := object(raw)
	if err != nil {
		return Batch{}, invalid("body", err.Error())
	}
	var b Batch
	var v ValidationError
	var hasProject, hasItems bool
	for _, m := range top {
		switch m.name {
		case "ingest_id":
			if s, ok := v.string("body.ingest_id", m.value); ok {
				if !isHex64(s) {
					v.add("body.ingest_id", ingestIDRule)
				}
				b.IngestID = s
			}
		case "project":
			hasProject = true
			if s, ok := v.string("body.project", m.value); ok {
				b.Project = s
				v.label("body.project", s, MaxProjectBytes)
			}
		case "items":
			hasItems = true
			b.Items = v.items(m.value)
		default:
			v.add("body", "has an unexpected member "+quoteName(m.name)+": a batch has ingest_id, project and items")
		}
	}
	if !hasProject {
		v.add("body.project", "is required: the project the items belong to")
	}
	if !hasItems {
		v.add("body.items", fmt.Sprintf("is required: 1 to %d items", MaxItems))
	}
	return b, v.err()
}

// items reads the items array.
func (v *ValidationError) items(raw json.RawMessage) []Item {
	var elems []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &elems) != nil {
		v.add("body.items", "must be an array of items")
		return nil
	}
	if len(elems) == 0 || len(elems) > MaxItems {
		v.add("body.items", fmt.Sprintf("has %d items; a batch has 1 to %d: split larger ones", len(elems), MaxItems))
		return nil
	}
	items := make([]Item, len(elems))
	for i, e := range elems {
		items[i] = v.item(fmt.Sprintf("body.items[%d]", i), e)
	}
	return items
}

// item reads one item at loc.
func (v *ValidationError) item(loc string, raw json.RawMessage) Item {
	it := Item{Kind: DefaultKind, Tags: []string{}}
	ms, err := object(raw)
	if err != nil {
		v.add(loc, err.Error())
		return it
	}
	hasText := false
	for _, m := range ms {
		at := loc + "." + m.name
		switch m.name {
		case "text":
			hasText = true
			if s, ok := v.string(at, m.value); ok {
				it.Text = s
				v.text(at, s)
			}
		case "kind":
			if s, ok := v.string(at, m.value); ok {
				it.Kind = s
				v.label(at, s, MaxKindBytes)
			}
		case "skill":
			if s, ok := v.string(at, m.value); ok {
				it.Skill = s
				v.label(at, s, MaxSkillBytes)
			}
		case "tags":
			it.Tags = v.tags(at, m.value)
		case "occurred_at":
			if s, ok := v.string(at, m.value); ok {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					v.add(at, "must be an RFC 3339 date and time, such as 2026-01-02T15:04:05Z")
				}
				it.OccurredAt = t.UTC().Truncate(time.Millisecond)
			}
		default:
			v.add(loc, "has an unexpected member "+quoteName(m.name)+": an item has text, kind, skill, tags and occurred_at")
		}
	}
	if !hasText {
		v.add(loc+".text", "is required: the note itself")
	}
	return it
}

// tags reads an item's tags at loc.
func (v *ValidationError) tags(loc string, raw json.RawMessage) []string {
	var elems []json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &elems) != nil {
		v.add(loc, "must be an array of strings")
		return []string{}
	}
	if len(elems) > MaxTags {
		v.add(loc, fmt.Sprintf("has %d tags; an item has at most %d", len(elems), MaxTags))
		return []string{}
	}
	tags := make([]string, 0, len(elems))
	for i, e := range elems {
		at := fmt.Sprintf("%s[%d]", loc, i)
		s, ok := v.string(at, e)
		if !ok {
			continue
		}
		if v.label(at, s, MaxTagBytes) {
			for j, t := range tags {
				if t == s {
					v.add(at, fmt.Sprintf("repeats %s[%d]: give each tag once", loc, j))
					ok = false
					break
				}
			}
		}
		if ok {
			tags = append(tags, s)
		}
	}
	return tags
}

// string reads a JSON string at loc.
func (v *ValidationError) string(loc string, raw json.RawMessage) (string, bool) {
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		v.add(loc, "must be a string (leave the member out rather than send null)")
		return "", false
	}
	return s, true
}

// text checks an item's text.
func (v *ValidationError) text(loc, s string) {
	switch {
	case len(s) > MaxTextBytes:
		v.add(loc, fmt.Sprintf("is %d bytes, more than %d (64 KiB): split the note", len(s), MaxTextBytes))
	case strings.TrimSpace(s) == "":
		v.add(loc, "must not be empty")
	case strings.IndexByte(s, 0) >= 0:
		v.add(loc, `must not contain U+0000 (the NUL character)`)
	}
}

// label checks a name (a project, kind, skill or tag): 1 to max bytes, no
// control characters, no white space at either end.
func (v *ValidationError) label(loc, s string, max int) bool {
	switch {
	case s == "":
		v.add(loc, "must not be empty (leave the member out instead)")
	case len(s) > max:
		v.add(loc, fmt.Sprintf("is %d bytes; the most is %d", len(s), max))
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		v.add(loc, "must not contain control characters")
	case strings.TrimSpace(s) != s:
		v.add(loc, "must not start or end with white space")
	default:
		return true
	}
	return false
}

// A member is one name and value of a JSON object.
type member struct {
	name  string
	value json.RawMessage
}

// object splits raw, one JSON object, into its members in order. A
// duplicate name is an error: which of the two would count is not
// something to guess.
func object(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil {
		return nil, errors.New("is not valid JSON")
	} else if tok != json.Delim('{') {
		return nil, errors.New("must be a JSON object")
	}
	var ms []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("is not valid JSON")
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, errors.New("is not valid JSON")
		}
		if seen[name] {
			return nil, errors.New("has the member " + quoteName(name) + " twice")
		}
		seen[name] = true
		ms = append(ms, member{name: name, value: value})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, errors.New("is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("has more after its closing brace")
	}
	return ms, nil
}

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// quoteName quotes a member name for a message, cut to 64 bytes: it is
// the client's text, not ours to repeat at length.
func quoteName(name string) string {
	if len(name) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", name[:cut])
	}
	return fmt.Sprintf("%q", name)
}
