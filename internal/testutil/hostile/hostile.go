package hostile

import "reflect"

// Name carries a terminal title sequence, a clear-screen sequence, a bell,
// a bidirectional override and a CR/LF that would forge a table line.
const Name = "evil\x1b]0;pwned\x07\x1b[2J\u202e\r\nTOTAL\t$0"

// Fill sets every settable string reachable from v (a pointer) to s: struct
// fields, slice and array elements, map keys and values (maps get one
// entry if empty), through pointers (nil pointers to structs are
// allocated). Exported fields only.
func Fill(v any, s string) {
	fill(reflect.ValueOf(v), s, 0)
}

func fill(v reflect.Value, s string, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			if !v.CanSet() || v.Type().Elem().Kind() != reflect.Struct {
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), s, depth+1)
	case reflect.String:
		if v.CanSet() {
			v.SetString(s)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s, depth+1)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 && v.CanSet() {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), s, depth+1)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), s, depth+1)
		}
	case reflect.Map:
		if !v.CanSet() && v.IsNil() {
			return
		}
		kt, et := v.Type().Key(), v.Type().Elem()
		k, e := reflect.New(kt).Elem(), reflect.New(et).Elem()
		fill(k, s, depth+1)
		fill(e, s, depth+1)
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(k, e)
	}
}

// ControlBytes counts the bytes of out a terminal acts on: C0 controls
// other than the line breaks the output itself writes, DEL, and the UTF-8
// of C1 controls and U+202E.
func ControlBytes(out string) int {
	n := 0
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
			n++
		}
	}
	return n
}
