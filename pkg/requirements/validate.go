package requirements

import (
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
)

// parseInt parses s as strconv.ParseInt(s, 10, 64) does (optional sign,
// decimal digits, leading zeros allowed, no underscores) without allocating
// on failure. Kubernetes compares label values with Gt/Lt through ParseInt,
// so bounds membership must agree with it exactly; a fuzz test checks that.
func parseInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	i, neg := 0, false
	switch s[0] {
	case '+':
		i = 1
	case '-':
		i, neg = 1, true
	}
	if i == len(s) {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		if n > limit/10 {
			return 0, false
		}
		n *= 10
		if n > limit-uint64(d) {
			return 0, false
		}
		n += uint64(d)
	}
	if neg {
		return int64(-n), true //nolint:gosec // n <= 1<<63 by construction
	}
	return int64(n), true
}

func isAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// isLabelName reports whether s matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
// and is at most 63 bytes: the name part of a label key and (when non-empty)
// a label value.
func isLabelName(s string) bool {
	if s == "" || len(s) > 63 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNSSubdomain reports whether s is a lowercase RFC 1123 subdomain of at
// most 253 bytes.
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '-') {
				return false
			}
			continue
		}
		// s[start:i] is one dot-separated label: non-empty, no leading or
		// trailing '-'.
		if i == start || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// isLabelKey is a non-allocating equivalent of content.IsLabelKey(s) == nil.
func isLabelKey(s string) bool {
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		return isLabelName(s)
	}
	if strings.IndexByte(s[slash+1:], '/') >= 0 {
		return false
	}
	return isDNSSubdomain(s[:slash]) && isLabelName(s[slash+1:])
}

// isLabelValue is a non-allocating equivalent of content.IsLabelValue(s) == nil.
func isLabelValue(s string) bool {
	return s == "" || isLabelName(s)
}

// labelKeyProblem explains why key is not a label key (slow path only).
func labelKeyProblem(key string) string {
	if key == "" {
		return "must not be empty"
	}
	msgs := content.IsLabelKey(key)
	if len(msgs) == 0 {
		return "is not a valid label key"
	}
	return strings.Join(msgs, "; ")
}

// labelValueProblem explains why v is not a label value (slow path only).
func labelValueProblem(v string) string {
	msgs := content.IsLabelValue(v)
	if len(msgs) == 0 {
		return "is not a valid label value"
	}
	return strings.Join(msgs, "; ")
}

// sortedDistinct returns the distinct values of vs in sorted order, never
// modifying vs. It returns nil for no values.
func sortedDistinct(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	if len(vs) == 1 {
		return []string{vs[0]}
	}
	out := slices.Clone(vs)
	slices.Sort(out)
	return slices.Compact(out)
}

// contains reports whether the sorted slice vs contains v, scanning linearly
// for small sets and bisecting larger ones. It never allocates.
func contains(vs []string, v string) bool {
	if len(vs) <= 8 {
		for _, x := range vs {
			if x == v {
				return true
			}
		}
		return false
	}
	_, found := slices.BinarySearch(vs, v)
	return found
}
