package ingest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A FieldError locates one problem in a request.
type FieldError struct {
	Location string // "body", "body.items[3].text", "query.limit", ...
	Message  string
}

// A ValidationError lists what is wrong with a request (422), or says the
// body is not JSON at all (Malformed, 400).
type ValidationError struct {
	Errors    []FieldError // at least one, at most MaxFieldErrors
	Malformed bool
}

// MaxFieldErrors bounds a [ValidationError]'s list.
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

func (e *ValidationError) err() error {
	if len(e.Errors) == 0 {
		return nil
	}
	return e
}

func invalid(location, message string) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Location: location, Message: message}}}
}

// Parse reads and checks the body of an ingest request, in one pass over
// its bytes. Unknown, null or repeated members are errors; every problem,
// up to MaxFieldErrors, is in the returned [*ValidationError].
func Parse(raw []byte) (Batch, error) {
	b, _, err := parse(raw)
	return b, err
}

// A sentItem is which optional members of an item the client gave, as the key needs them.
type sentItem struct {
	kind, tags bool
	occurredAt string // "" when not given
}

func parse(raw []byte) (Batch, []sentItem, error) {
	if len(raw) > MaxBodyBytes {
		return Batch{}, nil, invalid("body", fmt.Sprintf("is %d bytes, more than %d (8 MiB): split it into smaller batches", len(raw), MaxBodyBytes))
	}
	p := parser{s: scanner{data: raw, maxDepth: maxDepth}}
	b, sent := p.batch()
	if p.s.failed.syntax() || p.notJSON != "" {
		msg := p.notJSON
		if msg == "" {
			msg = fmt.Sprintf("%s (at byte %d)", p.s.failed.message(), p.s.failedAt)
		}
		return Batch{}, nil, &ValidationError{Errors: []FieldError{{Location: "body", Message: msg}}, Malformed: true}
	}
	if p.s.failed != ok {
		p.v.add("body", fmt.Sprintf("%s (at byte %d)", p.s.failed.message(), p.s.failedAt))
	}
	if err := p.v.err(); err != nil {
		return Batch{}, nil, err
	}
	return b, sent, nil
}

// maxDepth bounds nesting: a batch nests four deep, the rest is room to
// report a value of the wrong type.
const maxDepth = 16

var (
	batchMembers   = []string{"ingest_id", "project", "items"}
	itemMembers    = []string{"text", "kind", "skill", "tags", "occurred_at"}
	notBatchMember = "has a member that is not one of " + strings.Join(batchMembers, ", ")
	notItemMember  = "has a member that is not one of " + strings.Join(itemMembers, ", ")
)

// A place is where in a batch a problem is, as a location only once recorded.
type place struct {
	item   int    // -1 outside the items
	member string // of the batch (item < 0) or of the item
	tag    int    // -1 when not a tag
}

var body = place{item: -1, tag: -1}

func (p place) at(m string) place { p.member = m; return p }

func (p place) String() string {
	var b strings.Builder
	b.WriteString("body")
	if p.item >= 0 {
		b.WriteString(".items[" + strconv.Itoa(p.item) + "]")
	}
	if p.member != "" {
		b.WriteString("." + p.member)
	}
	if p.tag >= 0 {
		b.WriteString("[" + strconv.Itoa(p.tag) + "]")
	}
	return b.String()
}

// depth is how deep a value at p is nested: the batch is 1.
func (p place) depth() int {
	switch {
	case p.tag >= 0:
		return 5
	case p.item >= 0 && p.member != "":
		return 4
	case p.item >= 0:
		return 3
	case p.member != "":
		return 2
	}
	return 1
}

// A parser reads a batch from a scanner, recording its problems.
type parser struct {
	s       scanner
	v       ValidationError
	halted  bool   // nothing more is read
	notJSON string // why the body is not JSON, when the scanner did not see it
}

func (p *parser) add(at place, message string) {
	if len(p.v.Errors) < MaxFieldErrors {
		p.v.add(at.String(), message)
	}
}

// halt records a problem and stops the parse; it returns false.
func (p *parser) halt(at place, message string) bool {
	p.add(at, message)
	p.halted = true
	return false
}

func (p *parser) stopped() bool { return p.halted || p.s.failed != ok }

func (p *parser) batch() (b Batch, sent []sentItem) {
	if !p.batchOpens() {
		return
	}
	o := object{at: body, names: batchMembers, unknown: notBatchMember}
	var hasProject, hasItems bool
	for m, more := p.member(&o); more; m, more = p.member(&o) {
		at := body.at(batchMembers[m])
		switch m {
		case 0: // ingest_id
			b.IngestID = p.ingestID(at)
		case 1: // project
			hasProject = true
			b.Project = p.label(at, MaxProjectChars)
		case 2: // items
			hasItems = true
			b.Items, sent = p.items()
		}
	}
	p.batchEnds(hasProject, hasItems)
	return b, sent
}

func (p *parser) batchOpens() bool {
	s := &p.s
	switch c := s.peek(); {
	case c == '{':
		return true
	case c == 0 && s.pos >= len(s.data):
		p.notJSON, p.halted = "is empty: send the batch as a JSON object", true
	case startsValue(c):
		p.halt(body, "must be a JSON object")
	default:
		s.unexpected()
	}
	return false
}

func (p *parser) ingestID(at place) string {
	id, n, isString := p.string(at, 64)
	if isString && (n != 64 || !isHex64(id)) {
		p.add(at, ingestIDRule)
	}
	return id
}

func (p *parser) batchEnds(hasProject, hasItems bool) {
	if p.stopped() {
		return
	}
	if p.s.peek(); p.s.pos < len(p.s.data) {
		p.notJSON, p.halted = "has more after its closing brace", true
		return
	}
	if !hasProject {
		p.add(body.at("project"), "is required: the project the items belong to")
	}
	if !hasItems {
		p.add(body.at("items"), fmt.Sprintf("is required: 1 to %d items", MaxItems))
	}
}

func (p *parser) items() ([]Item, []sentItem) {
	at := body.at("items")
	if p.s.peek() != '[' {
		p.mistyped(at, "must be an array of items")
		return nil, nil
	}
	var items []Item
	var sent []sentItem
	begun := false
	for i := 0; p.next(&begun, ']'); i++ {
		if i == MaxItems {
			p.halt(at, fmt.Sprintf("has more than %d items: split the batch into batches of 1 to %d", MaxItems, MaxItems))
			return nil, nil
		}
		it, st := p.item(i)
		items, sent = append(items, it), append(sent, st)
	}
	if !p.stopped() && len(items) == 0 {
		p.add(at, fmt.Sprintf("has no items: a batch has 1 to %d", MaxItems))
	}
	return items, sent
}

func (p *parser) item(i int) (Item, sentItem) {
	it, sent := Item{Kind: DefaultKind, Tags: []string{}}, sentItem{}
	at := place{item: i, tag: -1}
	if p.s.peek() != '{' {
		p.mistyped(at, "must be a JSON object")
		return it, sent
	}
	o := object{at: at, names: itemMembers, unknown: notItemMember}
	hasText := false
	for m, more := p.member(&o); more; m, more = p.member(&o) {
		mat := at.at(itemMembers[m])
		switch m {
		case 0: // text
			hasText = true
			if s, n, isString := p.string(mat, MaxTextChars); isString {
				if msg := textProblem(s, n); msg != "" {
					p.add(mat, msg)
				}
				it.Text = s
			}
		case 1: // kind
			sent.kind = true
			it.Kind = p.label(mat, MaxKindChars)
		case 2: // skill
			it.Skill = p.label(mat, MaxSkillChars)
		case 3: // tags
			sent.tags = true
			it.Tags = p.tags(i)
		case 4: // occurred_at
			if s, n, isString := p.string(mat, MaxOccurredAtChars); isString {
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
	}
	if !p.stopped() && !hasText {
		p.add(at.at("text"), "is required: the note itself")
	}
	return it, sent
}

// parseTime reads an RFC 3339 date and time: T and Z in either case, a
// leap second (:60) as the last nanosecond of the second before it.
func parseTime(s string) (time.Time, bool) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case 't':
			return 'T'
		case 'z':
			return 'Z'
		}
		return r
	}, s)
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

func (p *parser) tags(i int) []string {
	at := place{item: i, member: "tags", tag: -1}
	if p.s.peek() != '[' {
		p.mistyped(at, "must be an array of strings")
		return []string{}
	}
	tags := []string{}
	var from [MaxTags]int // where each of tags was in the array
	begun := false
	for j := 0; p.next(&begun, ']'); j++ {
		if j == MaxTags {
			p.halt(at, fmt.Sprintf("has more than %d tags: an item has at most %d", MaxTags, MaxTags))
			return []string{}
		}
		tat := at
		tat.tag = j
		t, n, isString := p.string(tat, MaxTagChars)
		if !isString {
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
	return tags
}

// string reads the string at p: its value ("" when longer than max
// characters), its length, and whether it is a string at all.
func (p *parser) string(at place, max int) (value string, n int, isString bool) {
	if p.s.peek() != '"' {
		p.mistyped(at, "must be a string (leave the member out rather than send null)")
		return "", 0, false
	}
	raw, escaped, good := p.s.str()
	if !good {
		return "", 0, false
	}
	if n = valueChars(raw, escaped); n > max {
		return "", n, true // measured, not kept
	}
	if escaped {
		return unescape(raw), n, true
	}
	return string(raw), n, true
}

// mistyped records that the value at p is of the wrong kind, and skips it.
func (p *parser) mistyped(at place, message string) {
	if !startsValue(p.s.peek()) {
		p.s.unexpected()
		return
	}
	p.add(at, message)
	p.s.skip(at.depth())
}

func startsValue(c byte) bool { return c != 0 && strings.IndexByte(`{["-0123456789tfn`, c) >= 0 }

// label reads and checks a project, kind, skill or tag.
func (p *parser) label(at place, max int) string {
	s, n, isString := p.string(at, max)
	if !isString {
		return ""
	}
	if msg := labelProblem(s, n, max); msg != "" {
		p.add(at, msg)
	}
	return s
}

// textProblem says what is wrong with a text of n characters, "" if
// nothing: what textPattern matches is allowed.
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

// labelProblem says what is wrong with a label of n characters, "" if
// nothing: what labelPattern matches, up to max, is allowed.
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

// label records the problem of a label at loc, if any.
func (e *ValidationError) label(loc, s string, max int) {
	if msg := labelProblem(s, utf8.RuneCountInString(s), max); msg != "" {
		e.add(loc, msg)
	}
}

// An object is the state of reading one JSON object's members.
type object struct {
	at      place
	names   []string // the members it may have, each at most once
	unknown string   // the problem of a member not in names
	seen    uint32   // a bit per name read
	begun   bool
}

// member reads up to the next member's value and returns its index in
// o.names; false at the object's end or when the parse stops.
func (p *parser) member(o *object) (int, bool) {
	s := &p.s
	if !p.next(&o.begun, '}') {
		return -1, false
	}
	raw, escaped, good := s.str()
	if !good {
		return -1, false
	}
	m := lookup(o.names, raw, escaped)
	switch {
	case m < 0:
		return -1, p.halt(o.at, o.unknown)
	case o.seen&(1<<m) != 0:
		return -1, p.halt(o.at.at(o.names[m]), "is given twice: give each member once")
	}
	o.seen |= 1 << m
	if !s.consume(':') {
		return -1, false
	}
	return m, true
}

func lookup(names []string, raw []byte, escaped bool) int {
	if escaped {
		if len(raw) > 6*len("occurred_at") { // too long to be any name, however escaped
			return -1
		}
		return slices.Index(names, unescape(raw))
	}
	for i, n := range names {
		if string(raw) == n {
			return i
		}
	}
	return -1
}

// next moves to the next element of the array or object that the caller
// saw open (begun false) and end closes: false at its end, or when the
// parse has stopped.
func (p *parser) next(begun *bool, end byte) bool {
	s := &p.s
	if p.stopped() {
		return false
	}
	if !*begun {
		*begun = true
		s.pos++ // the opening byte the caller saw
		if s.peek() == end {
			s.pos++
			return false
		}
		return true
	}
	switch s.peek() {
	case ',':
		s.pos++
		return true
	case end:
		s.pos++
		return false
	}
	return s.unexpected()
}
