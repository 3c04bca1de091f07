package awsemu

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// params is a decoded query-protocol request (EC2 and IAM): the flat
// "a.b.1.c" keys of an application/x-www-form-urlencoded body, with helpers
// to walk structures and lists.
//
// EC2 lists are flat ("Filter.1.Name"); awsQuery lists (IAM) nest a
// "member" level ("Tags.member.1.Key"). The helpers accept both, so a
// handler does not care which protocol the request came in.
type params struct {
	prefix string // "" or "A.B." (with the trailing dot)
	values url.Values
}

func newParams(v url.Values) params { return params{values: v} }

// Get returns the value at key below the current prefix, "" when absent.
func (p params) Get(key string) string { return p.values.Get(p.prefix + key) }

// Has reports whether key (or anything below it) is present.
func (p params) Has(key string) bool {
	full := p.prefix + key
	if _, ok := p.values[full]; ok {
		return true
	}
	for k := range p.values {
		if strings.HasPrefix(k, full+".") {
			return true
		}
	}
	return false
}

// Sub returns the structure at key.
func (p params) Sub(key string) params {
	return params{prefix: p.prefix + key + ".", values: p.values}
}

// Items returns the elements of the list at key in index order: key.1,
// key.2, ... or key.member.1, ...
func (p params) Items(key string) []params {
	base := p.prefix + key + "."
	idx := map[int]string{}
	for k := range p.values {
		if !strings.HasPrefix(k, base) {
			continue
		}
		rest := k[len(base):]
		pre := base
		if strings.HasPrefix(rest, "member.") {
			rest = rest[len("member."):]
			pre = base + "member."
		} else if strings.HasPrefix(rest, "item.") {
			rest = rest[len("item."):]
			pre = base + "item."
		}
		n := rest
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			n = rest[:i]
		}
		i, err := strconv.Atoi(n)
		if err != nil || i < 1 {
			continue
		}
		idx[i] = pre + n
	}
	keys := make([]int, 0, len(idx))
	for i := range idx {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	out := make([]params, 0, len(keys))
	for _, i := range keys {
		out = append(out, params{prefix: idx[i] + ".", values: p.values})
	}
	return out
}

// Strings returns the scalar list at key (key.1=v, key.2=w or key.member.N).
func (p params) Strings(key string) []string {
	base := p.prefix + key + "."
	type kv struct {
		i int
		v string
	}
	var items []kv
	for k, vs := range p.values {
		if !strings.HasPrefix(k, base) || len(vs) == 0 {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(k[len(base):], "member."), "item.")
		i, err := strconv.Atoi(rest)
		if err != nil || i < 1 {
			continue
		}
		items = append(items, kv{i, vs[0]})
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

// Bool parses key as a boolean; absent is false.
func (p params) Bool(key string) bool {
	return strings.EqualFold(p.Get(key), "true")
}

// Int parses key as an integer. ok is false when the key is absent; err
// reports a malformed value.
func (p params) Int(key string) (v int64, ok bool, err *apiError) {
	s := p.Get(key)
	if s == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil {
		return 0, true, errInvalidParameterValue(key, s, "it is not an integer")
	}
	return n, true, nil
}

// RequiredInt is Int for a parameter the call cannot do without: absent is
// MissingParameter.
func (p params) RequiredInt(key string) (int64, *apiError) {
	v, ok, err := p.Int(key)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, errMissingParameter(key)
	}
	return v, nil
}
