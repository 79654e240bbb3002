package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
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
// its place. Callers answer it with 422 and the list, or with 400 when it
// is Malformed.
type ValidationError struct {
	Errors []FieldError // at least one, at most maxFieldErrors
	// Malformed says the body is not JSON at all (empty, cut short, a
	// character out of place, not UTF-8, more after the value); Errors
	// then holds that one problem, at "body".
	Malformed bool
}

// maxFieldErrors bounds a [ValidationError]'s list: a batch of a thousand
// bad items is told of its first hundred problems.
const maxFieldErrors = 100

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

// add records a problem, up to maxFieldErrors.
func (e *ValidationError) add(location, message string) {
	if len(e.Errors) < maxFieldErrors {
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

// Parse reads and checks the body of an ingest request, {"ingest_id"?,
// "project", "items": [{"text", "kind"?, "skill"?, "tags"?,
// "occurred_at"?}]}: no member null, repeated or unknown. The problems
// found, each at its place, are in a [*ValidationError], which never
// repeats the body's text. Parse streams the body with encoding/json and
// stops at the first thing no batch can be (bad JSON, an unknown or
// repeated member, a 1001st item, a 33rd tag, an over-long string), so
// junk costs less than a batch.
func Parse(raw []byte) (Batch, error) {
	b, _, err := parse(raw)
	return b, err
}

// A sentItem is what the key needs of an item beyond its [Item]: which
// optional members the client gave, as given (Item fills in defaults).
type sentItem struct {
	kind, tags bool
	occurredAt string // "" when not given
}

// parse is Parse, also returning, for a valid batch, what each item sent.
func parse(raw []byte) (Batch, []sentItem, error) {
	if len(raw) > MaxBodyBytes {
		return Batch{}, nil, invalid("body", fmt.Sprintf("is %d bytes, more than %d (8 MiB): split it into smaller batches", len(raw), MaxBodyBytes))
	}
	if !utf8.Valid(raw) {
		at := 0
		for r, n := utf8.DecodeRune(raw); r != utf8.RuneError || n != 1; r, n = utf8.DecodeRune(raw[at:]) {
			at += n
		}
		return Batch{}, nil, malformed(fmt.Sprintf("is not valid UTF-8 (at byte %d)", at))
	}
	p := parser{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw))}
	b, sent := p.batch()
	if !p.stopped() && len(bytes.TrimSpace(raw[p.dec.InputOffset():])) > 0 {
		p.broken = true
	}
	if p.broken {
		return Batch{}, nil, notJSON(raw)
	}
	if !p.halted && loneSurrogate(raw) {
		p.v.add("body", `holds a \u escape of half a UTF-16 surrogate pair (U+D800 to U+DFFF alone), which RFC 8785 canonical JSON cannot hold`)
	}
	if err := p.v.err(); err != nil {
		return Batch{}, nil, err
	}
	return b, sent, nil
}

// malformed is the ValidationError of a body that is not JSON.
func malformed(message string) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Location: "body", Message: message}}, Malformed: true}
}

// notJSON says where and why raw, which the parse could not read, is not
// JSON: encoding/json's own check finds the first bad byte.
func notJSON(raw []byte) *ValidationError {
	var se *json.SyntaxError
	if len(bytes.TrimSpace(raw)) == 0 {
		return malformed("is empty: send the batch as a JSON object")
	}
	if !errors.As(json.Unmarshal(raw, &discard{}), &se) {
		return malformed("is not valid JSON")
	}
	at := int(se.Offset) - 1 // the byte the check stopped at
	var why string
	switch msg := se.Error(); {
	case strings.Contains(msg, "after top-level value"):
		return malformed("has more after its closing brace")
	case int(se.Offset) >= len(raw):
		why, at = "it ends too soon", len(raw)
	case raw[at] < 0x20:
		why = "a control character in a string (escape it)"
	case strings.Contains(msg, "escape"):
		why = "a malformed escape in a string"
	case strings.Contains(msg, "depth"):
		why = "arrays and objects nested too deeply"
	default:
		why = "a character that JSON does not allow there"
	}
	return malformed(fmt.Sprintf("is not valid JSON: %s (at byte %d)", why, at))
}

// discard reads a JSON value and keeps nothing of it.
type discard struct{}

func (*discard) UnmarshalJSON([]byte) error { return nil }

// loneSurrogate reports whether a string of raw, JSON, holds a \u escape
// of half a UTF-16 surrogate pair: encoding/json reads it as U+FFFD, and
// the body's canonical form would not be the client's. In JSON every
// backslash starts an escape, so the check needs no parse.
func loneSurrogate(raw []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 || i+j+6 > len(raw) {
			return false
		}
		i += j
		if raw[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(raw[i+2:])
		switch {
		case !utf16.IsSurrogate(r):
			i += 6
		case r >= 0xdc00 || i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u':
			return true
		case hex4(raw[i+8:]) < 0xdc00 || hex4(raw[i+8:]) > 0xdfff:
			return true
		default:
			i += 12
		}
	}
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = c | 0x20 - 'a' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// The members of a batch and of an item, and the message that a member
// is none of them: it names the place, never the member, whose name is
// the client's text.
var (
	batchMembers   = []string{"ingest_id", "project", "items"}
	itemMembers    = []string{"text", "kind", "skill", "tags", "occurred_at"}
	notBatchMember = "has a member that is not one of " + strings.Join(batchMembers, ", ")
	notItemMember  = "has a member that is not one of " + strings.Join(itemMembers, ", ")
)

// A place is where in a batch a problem is: the batch, one of its
// members, an item, one of an item's members, or a tag. It becomes a
// location ("body.items[3].tags[1]") only when a problem is recorded.
type place struct {
	item   int    // the item's index, -1 outside the items
	member string // of the batch (item < 0) or of the item; "" for the object itself
	tag    int    // the tag's index, -1 when not a tag
}

var body = place{item: -1, tag: -1}

// at is the place of member m of the object at p.
func (p place) at(m string) place { p.member = m; return p }

func (p place) String() string {
	s := "body"
	if p.item >= 0 {
		s += ".items[" + strconv.Itoa(p.item) + "]"
	}
	if p.member != "" {
		s += "." + p.member
	}
	if p.tag >= 0 {
		s += "[" + strconv.Itoa(p.tag) + "]"
	}
	return s
}

// A parser reads a batch from a json.Decoder over raw, recording its
// problems.
type parser struct {
	raw    []byte
	dec    *json.Decoder
	v      ValidationError
	halted bool // at a problem after which nothing more is read
	broken bool // at bytes that are not JSON
}

func (p *parser) add(at place, message string) { p.v.add(at.String(), message) }

// halt records a problem at p and stops the parse.
func (p *parser) halt(at place, message string) {
	p.add(at, message)
	p.halted = true
}

func (p *parser) stopped() bool { return p.halted || p.broken }

// token reads the next token; nil once the parse has stopped.
func (p *parser) token() json.Token {
	if p.stopped() {
		return nil
	}
	t, err := p.dec.Token()
	p.broken = err != nil
	return t
}

// decode reads the next value into v, and reports whether it could.
func (p *parser) decode(v any) bool {
	if !p.stopped() {
		p.broken = p.dec.Decode(v) != nil
	}
	return !p.stopped()
}

// more reports whether the array or object being read has another element.
func (p *parser) more() bool { return !p.stopped() && p.dec.More() }

// next is where the next value or member name starts in raw, and peek
// its first byte (0 at the end).
func (p *parser) next() int {
	i := int(p.dec.InputOffset())
	for i < len(p.raw) && strings.IndexByte(" \t\r\n:,", p.raw[i]) >= 0 {
		i++
	}
	return i
}

func (p *parser) peek() byte {
	if i := p.next(); i < len(p.raw) {
		return p.raw[i]
	}
	return 0
}

// mistyped records that the value at p is not of the kind message says,
// and passes over it.
func (p *parser) mistyped(at place, message string) {
	if p.peek() == 0 {
		p.broken = true
		return
	}
	p.add(at, message)
	p.decode(&discard{})
}

// object reads the members of the object that comes next, calling read
// with the index in names of each; it stops the parse at a name not in
// names, or given twice.
func (p *parser) object(at place, names []string, unknown string, read func(m int)) {
	p.token() // {
	var seen uint32
	for p.more() {
		m := p.name(names)
		switch {
		case p.stopped():
			return
		case m < 0:
			p.halt(at, unknown)
			return
		case seen&(1<<m) != 0:
			p.halt(at.at(names[m]), "is given twice: give each member once")
			return
		}
		seen |= 1 << m
		read(m)
	}
	p.token() // }
}

// name reads a member's name and returns its index in names, or -1. A
// name longer than any of names, however escaped, is not read at all.
func (p *parser) name(names []string) int {
	if rest := p.raw[p.next():]; len(rest) > 0 && rest[0] == '"' {
		end := bytes.IndexByte(rest[1:min(len(rest), 80)], '"')
		if end < 0 || rest[end] == '\\' {
			return -1
		}
	}
	s, _ := p.token().(string)
	return slices.Index(names, s)
}

func (p *parser) batch() (b Batch, sent []sentItem) {
	if c := p.peek(); c != '{' {
		if c == 0 {
			p.broken = true
			return
		}
		p.halt(body, "must be a JSON object")
		return
	}
	var hasProject, hasItems bool
	p.object(body, batchMembers, notBatchMember, func(m int) {
		at := body.at(batchMembers[m])
		switch m {
		case 0:
			if id, n, ok := p.str(at, 64); ok && (n != 64 || !isHex64(id)) {
				p.add(at, ingestIDRule)
			} else {
				b.IngestID = id
			}
		case 1:
			hasProject = true
			b.Project = p.label(at, MaxProjectChars)
		case 2:
			hasItems = true
			b.Items, sent = p.items()
		}
	})
	if p.stopped() {
		return
	}
	if !hasProject {
		p.add(body.at("project"), "is required: the project the items belong to")
	}
	if !hasItems {
		p.add(body.at("items"), fmt.Sprintf("is required: 1 to %d items", MaxItems))
	}
	return b, sent
}

func (p *parser) items() ([]Item, []sentItem) {
	at := body.at("items")
	if p.peek() != '[' {
		p.mistyped(at, "must be an array of items")
		return nil, nil
	}
	var items []Item
	var sent []sentItem
	p.token() // [
	for i := 0; p.more(); i++ {
		if i == MaxItems {
			p.halt(at, fmt.Sprintf("has more than %d items: split the batch into batches of 1 to %d", MaxItems, MaxItems))
			return nil, nil
		}
		it, st := p.item(i)
		items, sent = append(items, it), append(sent, st)
	}
	p.token() // ]
	if !p.stopped() && len(items) == 0 {
		p.add(at, fmt.Sprintf("has no items: a batch has 1 to %d", MaxItems))
	}
	return items, sent
}

func (p *parser) item(i int) (Item, sentItem) {
	it, sent := Item{Kind: DefaultKind, Tags: []string{}}, sentItem{}
	at := place{item: i, tag: -1}
	if p.peek() != '{' {
		p.mistyped(at, "must be a JSON object")
		return it, sent
	}
	hasText := false
	p.object(at, itemMembers, notItemMember, func(m int) {
		mat := at.at(itemMembers[m])
		switch m {
		case 0:
			hasText = true
			if s, n, ok := p.str(mat, MaxTextChars); ok {
				if msg := textProblem(s, n); msg != "" {
					p.add(mat, msg)
				}
				it.Text = s
			}
		case 1:
			sent.kind = true
			it.Kind = p.label(mat, MaxKindChars)
		case 2:
			it.Skill = p.label(mat, MaxSkillChars)
		case 3:
			sent.tags = true
			it.Tags = p.tags(i)
		case 4:
			if s, n, ok := p.str(mat, MaxOccurredAtChars); ok {
				t, ok := parseTime(s)
				switch {
				case n > MaxOccurredAtChars:
					p.add(mat, fmt.Sprintf("is %d characters; the most is %d (an RFC 3339 date and time)", n, MaxOccurredAtChars))
				case !ok:
					p.add(mat, "must be an RFC 3339 date and time, such as 2026-01-02T15:04:05Z")
				}
				it.OccurredAt, sent.occurredAt = t.UTC().Truncate(time.Millisecond), s
			}
		}
	})
	if !p.stopped() && !hasText {
		p.add(at.at("text"), "is required: the note itself")
	}
	return it, sent
}

// tags reads the tags of item i.
func (p *parser) tags(i int) []string {
	at := place{item: i, member: "tags", tag: -1}
	tags := []string{}
	if p.peek() != '[' {
		p.mistyped(at, "must be an array of strings")
		return tags
	}
	var from [MaxTags]int // where each of tags was in the array
	p.token()             // [
	for j := 0; p.more(); j++ {
		if j == MaxTags {
			p.halt(at, fmt.Sprintf("has more than %d tags: an item has at most %d", MaxTags, MaxTags))
			return []string{}
		}
		tat := at
		tat.tag = j
		t, n, ok := p.str(tat, MaxTagChars)
		if !ok {
			continue
		}
		if msg := labelProblem(t, n, MaxTagChars); msg != "" {
			p.add(tat, msg)
			continue
		}
		if k := slices.Index(tags, t); k >= 0 {
			earlier := at
			earlier.tag = from[k]
			p.add(tat, "repeats "+earlier.String()+": give each tag once")
			continue
		}
		from[len(tags)] = j
		tags = append(tags, t)
	}
	p.token() // ]
	return tags
}

// str reads the string at p, of at most max characters: its value, its
// length in characters (as JSON Schema's maxLength counts them), and
// whether it is a string. A value of another kind is recorded as a
// problem, and passed over; a string longer than max is measured in
// place, not read, and stops the parse.
func (p *parser) str(at place, max int) (value string, n int, ok bool) {
	start := p.next()
	if start == len(p.raw) || p.raw[start] != '"' {
		p.mistyped(at, "must be a string (leave the member out rather than send null)")
		return "", 0, false
	}
	if s := p.raw[start+1 : strEnd(p.raw, start)]; len(s) > max {
		if n = chars(s); n > max {
			p.halted = true
			return "", n, true
		}
	}
	if !p.decode(&value) {
		return "", 0, false
	}
	return value, utf8.RuneCountInString(value), true
}

// strEnd is the index of the quote that closes the string whose opening
// quote is raw[i] (len(raw) if none does).
func strEnd(raw []byte, i int) int {
	for i++; ; i++ {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return len(raw)
		}
		i += j
		k := i
		for raw[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
	}
}

// chars counts the characters of the string whose bytes between its
// quotes are s, without unescaping it.
func chars(s []byte) int {
	n := 0
	for i := 0; i < len(s); n++ {
		switch {
		case s[i] != '\\':
			_, size := utf8.DecodeRune(s[i:])
			i += size
		case i+6 > len(s) || s[i+1] != 'u':
			i += 2
		case utf16.IsSurrogate(hex4(s[i+2:])) && i+12 <= len(s) && s[i+6] == '\\':
			i += 12
		default:
			i += 6
		}
	}
	return n
}

// label reads a name at p (a project, kind, skill or tag) of at most max
// characters, and checks it (see labelProblem).
func (p *parser) label(at place, max int) string {
	s, n, ok := p.str(at, max)
	if msg := labelProblem(s, n, max); ok && msg != "" {
		p.add(at, msg)
	}
	return s
}

var upperTZ = strings.NewReplacer("t", "T", "z", "Z")

// parseTime reads an RFC 3339 date and time (section 5.6): its T and Z
// in either case, and a leap second (:60) taken as the last nanosecond of
// the second before it (Go's time has no leap seconds).
func parseTime(s string) (time.Time, bool) {
	s = upperTZ.Replace(s)
	leap := len(s) > 19 && s[10] == 'T' && s[16] == ':' && s[17:19] == "60"
	if leap {
		s = s[:17] + "59" + s[19:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	if leap {
		t = t.Truncate(time.Second).Add(time.Second - time.Nanosecond)
	}
	return t, true
}

// textProblem says what is wrong with an item's text s of n characters
// ("" if nothing). What it allows is what textPattern matches.
func textProblem(s string, n int) string {
	switch {
	case n > MaxTextChars:
		return fmt.Sprintf("is %d characters, more than %d: split the note", n, MaxTextChars)
	case strings.TrimSpace(s) == "":
		return "must not be empty"
	case strings.IndexByte(s, 0) >= 0:
		return `must not contain U+0000 (the NUL character)`
	}
	return ""
}

// labelProblem says what is wrong with a name s of n characters (a
// project, kind, skill or tag), "" if nothing: it has 1 to max
// characters, no control characters, no white space at either end. What
// it allows is what labelPattern matches.
func labelProblem(s string, n, max int) string {
	switch {
	case n == 0:
		return "must not be empty (leave the member out instead)"
	case n > max:
		return fmt.Sprintf("is %d characters; the most is %d", n, max)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "must not contain control characters"
	case strings.TrimSpace(s) != s:
		return "must not start or end with white space"
	}
	return ""
}

// text records the problem of an item's text s at loc, if any.
func (e *ValidationError) text(loc, s string) {
	if msg := textProblem(s, utf8.RuneCountInString(s)); msg != "" {
		e.add(loc, msg)
	}
}

// label records the problem of a name s at loc, if any (see
// labelProblem), and reports whether it had none.
func (e *ValidationError) label(loc, s string, max int) bool {
	if msg := labelProblem(s, utf8.RuneCountInString(s), max); msg != "" {
		e.add(loc, msg)
		return false
	}
	return true
}
