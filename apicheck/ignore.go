package apicheck

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// An IgnoreList accepts deliberate breaking changes, a line each: the finding's
// id, its method and path or its component, and a required reason after '#':
//
//	api-path-removed-without-deprecation GET /api/v1/old  # replaced by /api/v1/new in v2
type IgnoreList struct {
	entries []ignoreEntry
}

type ignoreEntry struct {
	id, method, path, component string
	fields                      string // as the line has them, for messages
	line                        int
}

// ParseIgnore reads an ignore file; name is for error messages.
func ParseIgnore(r io.Reader, name string) (*IgnoreList, error) {
	l := &IgnoreList{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		spec, reason, _ := strings.Cut(text, "#")
		reason = strings.TrimSpace(reason)
		f := strings.Fields(spec)
		e := ignoreEntry{fields: strings.Join(f, " "), line: n}
		switch len(f) {
		case 3:
			e.id, e.method, e.path = f[0], strings.ToUpper(f[1]), f[2]
		case 2:
			e.id, e.component = f[0], f[1]
		default:
			return nil, fmt.Errorf("%s:%d: want <id> <METHOD> <path> # <reason>, or <id> <component> # <reason>", name, n)
		}
		if reason == "" {
			return nil, fmt.Errorf("%s:%d: an accepted break needs a reason after '#'", name, n)
		}
		l.entries = append(l.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return l, nil
}

// IgnoreLine is the line of an ignore file that accepts f, for reason.
func IgnoreLine(f Finding, reason string) string {
	return f.ID + " " + f.where() + "  # " + reason
}

// Filter splits findings into those still breaking and those the list accepts,
// and returns the entries that matched nothing as "line N: ...". A nil list accepts nothing.
func (l *IgnoreList) Filter(findings []Finding) (breaking, accepted []Finding, unused []string) {
	if l == nil {
		return findings, nil, nil
	}
	used := make([]bool, len(l.entries))
	for _, f := range findings {
		ok := false
		for i, e := range l.entries {
			if e.id == f.ID && e.method == f.Method && e.path == f.Path && e.component == f.Component {
				used[i], ok = true, true
			}
		}
		if ok {
			accepted = append(accepted, f)
		} else {
			breaking = append(breaking, f)
		}
	}
	for i, e := range l.entries {
		if !used[i] {
			unused = append(unused, fmt.Sprintf("line %d: %s", e.line, e.fields))
		}
	}
	return breaking, accepted, unused
}
