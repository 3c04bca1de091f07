// Package termtext makes text that came from input (object names, labels,
// messages, record values, error messages) safe to print on a terminal:
// Escape writes every control byte, format character and invalid UTF-8 as
// a visible Go-style escape (\x1b, \r, \n, \u202e), so a name cannot set
// the terminal's title, clear the screen or forge a line of a table;
// Message does the same for a multi-line message, keeping its line breaks
// and capping what it prints; Clip caps one value echoed in an error.
//
// Every command's text output (tables, explanations, warnings, errors)
// goes through it; JSON and YAML output do not (their encoders quote
// exactly, and a reader gets the bytes the cluster holds).
//
// It must not depend on anything but the standard library, and must not
// change text that needs no escaping (ordinary names print as they are).
package termtext
