package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDecodeErrors bounds the field errors reported for one document.
const maxDecodeErrors = 50

// decodeErrors turns a failed decoding of raw into field errors, all of
// them, not only the first: every bad quantity (found by walking the
// document), then every type mismatch, found one at a time by decoding
// again with the fields already reported removed (the standard decoder
// reports the earliest mismatch, at an offset that locates it with its list
// indices). err is the decoder's error, reported as is when nothing more
// precise is found; path prefixes the paths (List items).
func decodeErrors(raw []byte, err error, path *field.Path, newObj func() any) field.ErrorList {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if dec.Decode(&generic) != nil {
		return field.ErrorList{field.Invalid(pathOr(path, "<document>"), nil, err.Error())}
	}
	var out field.ErrorList
	for _, bq := range findBadQuantities(generic, nil) {
		out = append(out, field.Invalid(segmentsPath(path, bq.at, true), bq.value, "not a quantity: "+bq.err.Error()))
		generic = removeAt(generic, bq.at)
	}
	for len(out) < maxDecodeErrors {
		var enc spanEncoder
		enc.encode(generic, nil)
		derr := json.Unmarshal(enc.buf.Bytes(), newObj())
		var te *json.UnmarshalTypeError
		if !errors.As(derr, &te) {
			if derr != nil {
				out = append(out, field.Invalid(pathOr(path, "<document>"), nil, derr.Error()))
			}
			break
		}
		at, ok := enc.at(te.Offset)
		if !ok || len(at) == 0 {
			out = append(out, field.Invalid(pathOr(path, "<document>"), te.Value, fmt.Sprintf("must be of type %s", te.Type)))
			break
		}
		out = append(out, field.Invalid(segmentsPath(path, at, false), describeValue(te.Value, valueAt(generic, at)), fmt.Sprintf("must be of type %s", te.Type)))
		generic = removeAt(generic, at)
	}
	if len(out) == 0 {
		out = field.ErrorList{field.Invalid(pathOr(path, "<document>"), nil, err.Error())}
	}
	return out
}

// describeValue is the offending value for a message: the scalar itself,
// else the JSON kind the decoder names.
func describeValue(kind string, v any) any {
	switch v := v.(type) {
	case string, bool:
		return v
	case json.Number:
		return v.String()
	}
	return kind
}

// identifier matches keys written as .child in a path; others are [key].
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// segmentsPath builds a field path from segments (string keys, int
// indices) under root; lastIsKey writes the last key as [key] (resource
// names).
func segmentsPath(root *field.Path, at []any, lastIsKey bool) *field.Path {
	p := root
	for i, s := range at {
		switch s := s.(type) {
		case int:
			p = indexOr(p, s)
		case string:
			if p != nil && ((lastIsKey && i == len(at)-1) || !identifier.MatchString(s)) {
				p = p.Key(s)
			} else {
				p = pathOr(p, s)
			}
		}
	}
	return pathOr(p, "")
}

func valueAt(v any, at []any) any {
	for _, s := range at {
		switch s := s.(type) {
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				return nil
			}
			v = l[s]
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[s]
		}
	}
	return v
}

// removeAt removes the value at a path (a list element becomes null, so
// the indices of the others stay) and returns the root.
func removeAt(root any, at []any) any {
	if len(at) == 0 {
		return nil
	}
	parent := valueAt(root, at[:len(at)-1])
	switch s := at[len(at)-1].(type) {
	case int:
		if l, ok := parent.([]any); ok && s < len(l) {
			l[s] = nil
		}
	case string:
		if m, ok := parent.(map[string]any); ok {
			delete(m, s)
		}
	}
	return root
}

// spanEncoder writes a decoded document back as compact JSON and records
// where each value lies, to map a decoder's error offset to its path.
type spanEncoder struct {
	buf   bytes.Buffer
	spans []span
}

type span struct {
	start, end int64
	at         []any
}

func (e *spanEncoder) encode(v any, at []any) {
	start := int64(e.buf.Len())
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			e.buf.Write(kb)
			e.buf.WriteByte(':')
			e.encode(v[k], append(slices.Clip(at), k))
		}
		e.buf.WriteByte('}')
	case []any:
		e.buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			e.encode(x, append(slices.Clip(at), i))
		}
		e.buf.WriteByte(']')
	case json.Number:
		e.buf.WriteString(v.String())
	default:
		b, _ := json.Marshal(v)
		e.buf.Write(b)
	}
	e.spans = append(e.spans, span{start: start, end: int64(e.buf.Len()), at: at})
}

// at returns the path of the innermost value the decoder's offset points
// into: a literal's offset is its end, an object's or list's the byte after
// its opening bracket.
func (e *spanEncoder) at(off int64) ([]any, bool) {
	var best *span
	for i := range e.spans {
		s := &e.spans[i]
		if s.start < off && off <= s.end && (best == nil || len(s.at) > len(best.at)) {
			best = s
		}
	}
	if best == nil {
		return nil, false
	}
	return best.at, true
}

// badQuantity is a quantity that does not parse, at a path of segments.
type badQuantity struct {
	at    []any
	value string
	err   error
}

// findBadQuantities lists every value under a quantity map key
// (quantityParents) or a storage/volumeSize key that is not a quantity.
func findBadQuantities(v any, at []any) []badQuantity {
	var out []badQuantity
	check := func(x any, where []any) {
		s := fmt.Sprint(x)
		if _, err := resource.ParseQuantity(s); err != nil {
			out = append(out, badQuantity{at: where, value: s, err: err})
		}
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			child := v[k]
			here := append(slices.Clip(at), k)
			if m, ok := child.(map[string]any); ok && quantityParents[k] {
				names := make([]string, 0, len(m))
				for n := range m {
					names = append(names, n)
				}
				slices.Sort(names)
				for _, n := range names {
					if _, nested := m[n].(map[string]any); !nested {
						check(m[n], append(slices.Clip(here), n))
					}
				}
			}
			if k == "storage" || k == "volumeSize" {
				if _, ok := child.(string); ok {
					check(child, here)
				}
			}
			out = append(out, findBadQuantities(child, here)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, findBadQuantities(x, append(slices.Clip(at), i))...)
		}
	}
	return out
}
