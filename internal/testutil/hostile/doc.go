// Package hostile is test support for text output: Fill sets every string
// of a value (fields, slices, map keys and values, through pointers) to a
// string a terminal would act on, and ControlBytes counts what of it
// reached the output unescaped.
//
// It must not be imported by production code.
package hostile
