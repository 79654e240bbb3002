// Package settings is the row type of brain's settings table and the
// parsers and formatters rows share. A setting is a flag and an
// environment variable with a default and a usage line; the platform
// (cmd/brain) and each module (a feature with settings) declare their own rows,
// and cmd/brain reads them all, flag over variable over default.
//
// A default is written once: a row's Default is formatted from the
// package constant the code uses (Int, Duration, Size, a rate's
// String), never restated as a literal.
package settings

// A Setting ties a flag and an environment variable to a value. Set
// parses a value given as text (the default, the variable or the flag)
// into the field the row was made for; its error says what is wanted,
// and the caller names the setting.
type Setting struct {
	Flag, Env, Default, Usage string
	// Secret marks a value that may hold a password: it is never shown
	// in the usage or in an error.
	Secret bool
	Set    func(v string) error
}

// A Table is what one package declares: its rows, and the families of
// the variables among them that set rate limits.
type Table struct {
	Rows []Setting
	// Families are prefixes of the names of the table's variables that
	// set rate limits (BRAIN_RATE_LIMIT): a variable set under one of
	// them that is no setting is a typo, which stops start-up rather
	// than change nothing.
	Families []string
}
