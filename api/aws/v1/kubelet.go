package v1

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// kubeletFields maps the JSON names of KubeletConfiguration's typed fields
// to their field indexes.
var kubeletFields = sync.OnceValue(func() map[string]int {
	out := map[string]int{}
	t := reflect.TypeFor[KubeletConfiguration]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = i
		}
	}
	return out
})

// UnmarshalJSON decodes the typed keys one by one and records the others
// in UnknownKeys, with their values in UnknownValues. Like the peer's CRD, the schema takes the kubelet object
// free-form, so a typed key may hold a value of another type: it is left
// unset and recorded in TypeErrors (RuntimeValidate reports it), rather
// than failing the decoding of the whole class. A value that is not a JSON
// object is an error.
func (in *KubeletConfiguration) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out KubeletConfiguration
	v := reflect.ValueOf(&out).Elem()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	}) {
		i, known := kubeletFields()[k]
		if !known {
			out.UnknownKeys = append(out.UnknownKeys, k)
			if out.UnknownValues == nil {
				out.UnknownValues = map[string]string{}
			}
			out.UnknownValues[k] = string(raw[k])
			continue
		}
		f := reflect.New(v.Field(i).Type())
		if err := json.Unmarshal(raw[k], f.Interface()); err != nil {
			if out.TypeErrors == nil {
				out.TypeErrors = map[string]string{}
			}
			out.TypeErrors[k] = "must be " + jsonKind(v.Field(i).Type())
			continue
		}
		v.Field(i).Set(f.Elem())
	}
	*in = out
	return nil
}

// MarshalJSON writes the typed keys and, beside them, the other keys as
// they were read (UnknownValues), so that a class read and written back
// keeps its free-form kubelet keys. A typed key wins over an unknown key
// of the same name (which UnmarshalJSON never produces).
func (in KubeletConfiguration) MarshalJSON() ([]byte, error) {
	type plain KubeletConfiguration // without this method
	b, err := json.Marshal(plain(in))
	if err != nil || len(in.UnknownValues) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range in.UnknownValues {
		if _, typed := m[k]; !typed && json.Valid([]byte(v)) {
			m[k] = json.RawMessage(v)
		}
	}
	return json.Marshal(m)
}

// jsonKind names the JSON type a Go field type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map:
		return "a map of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct:
		if t.Name() == "Duration" {
			return "a duration such as 1m30s"
		}
		return "an object"
	}
	return "a string"
}
