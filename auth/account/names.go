// This file is the rule of an API key's name beyond its schema.
package account

import (
	"strings"
	"unicode"
)

// displayable reports whether a name can be shown to a person as it is:
// not blank, and free of control characters (C0 and C1) and of the
// invisible characters that reorder or break text (bidi controls, line
// and paragraph separators). The schema's pattern refuses C0 controls;
// the rest cannot be written portably in a JSON Schema pattern.
func displayable(name string) bool {
	if strings.TrimSpace(name) == "" {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}
