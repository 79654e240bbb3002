// Package settings is the row type of the settings table (a flag and an
// environment variable each) and the parsers and formatters rows share. A
// row's Default is formatted from the constant the code uses, never restated.
package settings

// A Setting ties a flag and an environment variable to a value; Set parses
// text into the row's field, its error saying what is wanted.
type Setting struct {
	Flag, Env, Default, Usage string
	Secret                    bool // a password: never shown in the usage or an error
	Set                       func(v string) error
}

// A Table is one package's rows, and Families: the prefixes of its rate-limit
// variables, under which a variable that is no setting stops start-up.
type Table struct {
	Rows     []Setting
	Families []string
}
