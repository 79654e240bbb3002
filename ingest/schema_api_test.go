package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
)

// A probe is one body made from the served schema: a node of the body set
// to a value at one of its rules' boundaries, whether the schema admits
// it, and, when it does not, the rule it breaks and where.
type probe struct {
	name     string
	body     any
	admitted bool
	where    string // the node's location, as the envelope writes it
	rule     string // a phrase the refusal of that rule says
}

// ingestProbes walks the served IngestRequest schema (and IngestItem's,
// through its $ref) and makes, for every member, every rule the schema
// states: just inside and just outside each minLength, maxLength,
// minItems and maxItems (in characters of one, two and four bytes), each
// pattern against white space and control characters, uniqueItems, a
// null, a required member left out, and a member the schema does not
// have.
type ingestProbes struct {
	spec   specDoc
	probes []probe
}

// minimal is the smallest value s admits: an object of its required
// members, an array of minItems elements, a string of minLength.
func (g *ingestProbes) minimal(s map[string]any) any {
	s = g.spec.schema(s)
	switch kind(s) {
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			obj[r.(string)] = g.minimal(props[r.(string)].(map[string]any))
		}
		return obj
	case "array":
		n := max(intOf(s, "minItems"), 0)
		out := make([]any, n)
		for i := range out {
			out[i] = g.element(s, i)
		}
		return out
	}
	return str(s, max(intOf(s, "minLength"), 1))
}

// element is an array's i-th element, each distinct from the others.
func (g *ingestProbes) element(arr map[string]any, i int) any {
	el := g.spec.schema(arr["items"].(map[string]any))
	if kind(el) == "string" {
		v := str(el, max(intOf(el, "minLength"), 1))
		return strconv.Itoa(i) + v[min(len(v), len(strconv.Itoa(i))):]
	}
	return g.minimal(el)
}

// str is a string of n characters s admits but for its length: of one
// character repeated, which the pattern admits at the longest length.
func str(s map[string]any, n int) string {
	for _, c := range []string{"x", "0"} {
		if re := pattern(s); re == nil || re.MatchString(strings.Repeat(c, intOr(s, "maxLength", 1))) {
			return strings.Repeat(c, n)
		}
	}
	panic("no character admitted")
}

func intOf(s map[string]any, k string) int { return intOr(s, k, -1) }

func intOr(s map[string]any, k string, def int) int {
	if f, ok := s[k].(float64); ok {
		return int(f)
	}
	return def
}

func pattern(s map[string]any) *regexp.Regexp {
	if p, ok := s["pattern"].(string); ok {
		return regexp.MustCompile(p)
	}
	return nil
}

// admits reports whether the string schema s admits v.
func admits(s map[string]any, v string) bool {
	n := utf8.RuneCountInString(v)
	if min := intOf(s, "minLength"); min >= 0 && n < min {
		return false
	}
	if max := intOf(s, "maxLength"); max >= 0 && n > max {
		return false
	}
	re := pattern(s)
	return re == nil || re.MatchString(v)
}

// kind is s's type other than null.
func kind(s map[string]any) string {
	if types, ok := s["type"].([]any); ok {
		for _, t := range types {
			if t != "null" {
				return t.(string)
			}
		}
	}
	t, _ := s["type"].(string)
	return t
}

// nullable reports whether s's type admits null.
func nullable(s map[string]any) bool {
	types, _ := s["type"].([]any)
	return slices.Contains(types, any("null"))
}

// walk adds the probes of the node s at loc; with makes the whole body
// with the node set to a value.
func (g *ingestProbes) walk(s map[string]any, loc string, with func(v any) any) {
	s = g.spec.schema(s)
	add := func(name string, v any, admitted bool, where, rule string) {
		g.probes = append(g.probes, probe{name: loc + ": " + name, body: with(v), admitted: admitted, where: where, rule: rule})
	}
	add("null", nil, nullable(s), loc, "must be")
	switch kind(s) {
	case "object":
		props := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, name := range slices.Sorted(mapsKeys(props)) {
			child := props[name].(map[string]any)
			g.walk(child, loc+"."+name, func(v any) any {
				obj := g.minimal(s).(map[string]any)
				obj[name] = v
				return with(obj)
			})
			if slices.Contains(req, any(name)) {
				obj := g.minimal(s).(map[string]any)
				delete(obj, name)
				add("without "+name, obj, false, loc+"."+name, "is required")
			}
		}
		if s["additionalProperties"] == false {
			obj := g.minimal(s).(map[string]any)
			obj["colour"] = "red"
			add("an unknown member", obj, false, loc, "not one of")
		}
	case "array":
		elems := func(n int) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = g.element(s, i)
			}
			return out
		}
		if min := intOf(s, "minItems"); min > 0 {
			add("minItems-1", elems(min-1), false, loc, "no items")
			add("minItems", elems(min), true, loc, "")
		}
		if max := intOf(s, "maxItems"); max >= 0 {
			add("maxItems", elems(max), true, loc, "")
			add("maxItems+1", elems(max+1), false, loc, "more than "+strconv.Itoa(max))
		}
		if kind(g.spec.schema(s["items"].(map[string]any))) == "string" {
			e := g.element(s, 0)
			add("a repeat", []any{e, e}, s["uniqueItems"] != true, loc+"[1]", "repeats")
			add("no repeat", []any{e, g.element(s, 1)}, true, loc, "")
		}
		g.walk(s["items"].(map[string]any), loc+"[0]", func(v any) any { return with([]any{v}) })
	case "string":
		if s["format"] == "date-time" { // RFC 3339's rules (section 5.6), and a length's
			for _, v := range []string{
				"2026-01-02T15:04:05.123+02:00",
				"2024-01-01t00:00:00z",      // T and Z may be lowercase
				"2024-01-01T00:00:00z",      //
				"2016-12-31T23:59:60Z",      // a leap second
				"2016-12-31T18:59:60-05:00", // the same, at an offset
				"2016-12-31T23:59:60.5Z",    //
				"2024-01-01T00:00:00+00:00", // offsets
				"2024-01-01T00:00:00-00:00", //
				"2024-01-01T00:00:00+23:59", //
				"2024-01-01T00:00:00-12:30", //
				"2024-02-29T00:00:00Z",      //
			} {
				add(fmt.Sprintf("date-time %q", v), v, true, loc, "")
			}
			for _, v := range []string{"yesterday", "2024-01-01", "2024-01-01 00:00:00Z", "2024-01-01T00:00:00", "2023-02-29T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:61Z"} {
				add(fmt.Sprintf("date-time %q", v), v, false, loc, "RFC 3339")
			}
			// Fractions of a second of any length, up to the schema's
			// maxLength; with none, a long one is admitted.
			long := func(n int) string { // a date-time of n characters
				return "2024-01-01T00:00:00." + strings.Repeat("1", n-len("2024-01-01T00:00:00.Z")) + "Z"
			}
			for _, n := range []int{22, 30, 31} { // 1, 9 and 10 digits
				add(fmt.Sprintf("date-time of %d characters", n), long(n), true, loc, "")
			}
			if max := intOf(s, "maxLength"); max >= 0 {
				add("date-time of maxLength", long(max), true, loc, "")
				add("date-time of maxLength+1", long(max+1), false, loc, strconv.Itoa(max))
			} else {
				add("date-time of 73 characters", long(73), true, loc, "")
			}
			return
		}
		lengths := map[string]int{"empty": 0}
		if min := intOf(s, "minLength"); min > 0 {
			lengths["minLength"], lengths["minLength-1"] = min, min-1
		}
		if max := intOf(s, "maxLength"); max >= 0 {
			lengths["maxLength"], lengths["maxLength+1"] = max, max+1
		}
		for name, n := range lengths {
			for _, c := range []string{"", "é", "😀"} {
				v := str(s, n)
				if c != "" {
					v = strings.Repeat(c, n)
				}
				rule := "must"
				if strings.HasPrefix(name, "maxLength") {
					rule = strconv.Itoa(intOf(s, "maxLength"))
				}
				if c != "" && !admits(s, v) && admits(s, str(s, n)) {
					rule = "" // the pattern refuses the character: the pattern probes cover that
				}
				add(fmt.Sprintf("%s %q", name, c), v, admits(s, v), loc, rule)
			}
		}
		// White space and control characters, where a pattern would
		// refuse them: a schema without one admits them all.
		for _, v := range []string{" ", "   ", "\t", " x", "x ", "x y", "\u3000x", "x\u00a0", "x\u0085y", "x\u0000y", "x\ty", "x\u007fy", "\u200bx", "\ufeff", "é", "😀"} {
			add(fmt.Sprintf("pattern %+q", v), v, admits(s, v), loc, "must")
		}
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The ingest schema says exactly what the server accepts: every body the
// served schema admits, at each boundary of its rules, is accepted (202),
// and every body it does not is refused (422), at the member whose rule
// it breaks and saying which. The schema once admitted null items and
// tags, an empty kind and skill, a blank text and repeated tags, and
// counted in characters limits the server counted in bytes.
func TestSpecIngestSchemaIsWhatIsAccepted(t *testing.T) {
	l, _, ada := memoryServer(t)
	spec := mustServedSpec(t, l)
	op := spec.paths["/api/v1/memory/ingest"]["post"].(map[string]any)
	root := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	g := &ingestProbes{spec: spec}
	g.walk(root, "body", func(v any) any { return v })
	if len(g.probes) < 50 {
		t.Fatalf("only %d probes", len(g.probes))
	}
	admitted := 0
	for i, p := range g.probes {
		if p.admitted {
			admitted++
			// Each accepted batch is its own: a project of its own when
			// the probe leaves the project alone.
			if m, ok := p.body.(map[string]any); ok && m["project"] == "x" && m["ingest_id"] == nil {
				m["project"] = "p" + strconv.Itoa(i)
			}
		}
		b, err := json.Marshal(p.body)
		if err != nil {
			t.Fatal(err)
		}
		r, err := apitest.Exchange(context.Background(), l.HTTP, "POST", l.URL+"/api/v1/memory/ingest", bytes.NewReader(b), ada)
		if err != nil {
			t.Fatal(err)
		}
		if p.admitted {
			if r.Status != http.StatusAccepted {
				t.Errorf("%s: the schema admits it; %d %.300s", p.name, r.Status, r.Body)
			}
			continue
		}
		var env envelope
		_ = json.Unmarshal([]byte(r.Body), &env)
		named := slices.ContainsFunc(env.Details.Errors, func(e struct{ Location, Message string }) bool {
			return strings.HasPrefix(e.Location, p.where) && strings.Contains(e.Message, p.rule)
		})
		if r.Status != http.StatusUnprocessableEntity || !named {
			t.Errorf("%s: the schema refuses it; %d %.300s, want 422 at %s saying %q", p.name, r.Status, r.Body, p.where, p.rule)
		}
	}
	t.Logf("%d probes, %d admitted", len(g.probes), admitted)
}

// q's bound is in characters, as its maxLength says: 1024 "é" are 2048
// bytes, and a query.
func TestSpecQueryBoundIsCharacters(t *testing.T) {
	l, _, ada := memoryServer(t)
	spec := mustServedSpec(t, l)
	var max int
	for _, p := range spec.paths["/api/v1/memory/query"]["get"].(map[string]any)["parameters"].([]any) {
		if p := p.(map[string]any); p["name"] == "q" {
			max = intOf(p["schema"].(map[string]any), "maxLength")
		}
	}
	if max != ingest.MaxQueryChars {
		t.Fatalf("q's maxLength is %d, the service's bound %d", max, ingest.MaxQueryChars)
	}
	for _, tc := range []struct {
		n      int
		status int
	}{{max, http.StatusOK}, {max + 1, http.StatusUnprocessableEntity}} {
		q := url.QueryEscape(strings.Repeat("é", tc.n))
		l.Call("GET", "/api/v1/memory/query?q="+q, nil, ada).Want(t, tc.status, fmt.Sprintf("q of %d characters é", tc.n))
	}
}

// mustServedSpec reads /openapi.json from l.
func mustServedSpec(tb testing.TB, l *live) specDoc {
	tb.Helper()
	r := l.Call("GET", "/openapi.json", nil).Want(tb, http.StatusOK, "the spec")
	var d specDoc
	r.Decode(tb, &d.raw)
	d.paths = map[string]map[string]any{}
	for p, item := range d.raw["paths"].(map[string]any) {
		d.paths[p] = item.(map[string]any)
	}
	return d
}

// specDoc is the served spec, read as generic JSON, for the walks of the
// contract as a client reads it.
type specDoc struct {
	raw   map[string]any
	paths map[string]map[string]any
}

// schema resolves a $ref to a component schema.
func (d specDoc) schema(s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		return d.raw["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	}
	return s
}
