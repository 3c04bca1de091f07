package v1

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// kubeletKeys are the JSON names of KubeletConfiguration's fields.
var kubeletKeys = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[KubeletConfiguration]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
})

// UnmarshalJSON decodes the known keys and records the others in
// UnknownKeys.
func (in *KubeletConfiguration) UnmarshalJSON(b []byte) error {
	type plain KubeletConfiguration
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.UnknownKeys = nil
	for k := range raw {
		if !kubeletKeys()[k] {
			p.UnknownKeys = append(p.UnknownKeys, k)
		}
	}
	slices.Sort(p.UnknownKeys)
	*in = KubeletConfiguration(p)
	return nil
}
