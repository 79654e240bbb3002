package account

import "testing"

// A name is displayable unless it is blank or carries a character that
// hides, reorders or breaks the text around it.
func TestDisplayable(t *testing.T) {
	for name, want := range map[string]bool{
		"laptop":              true,
		"Ada's laptop (café)": true,
		"ノート":                 true,
		"":                    false,
		" \t ":                false,
		"\u009b31m":           false, // C1 control (CSI)
		"a\u0085b":            false, // next line
		"\u202eevil":          false, // right-to-left override
		"\u2066x":             false, // left-to-right isolate
		"a\u2028b":            false, // line separator
		"a\u2029b":            false, // paragraph separator
	} {
		if got := displayable(name); got != want {
			t.Errorf("displayable(%q) = %v, want %v", name, got, want)
		}
	}
}
