package requirements

import "strings"

// hinter picks, among candidate keys, the one a mistyped key most probably
// meant: the smallest edit distance within a budget that grows with the key's
// length, or the same name under another domain prefix
// ("karpenter.sh/instance-family" for "karpenter.k8s.aws/instance-family").
// Ties go to the smaller key, so the answer never depends on candidate order.
type hinter struct {
	key      string
	name     string
	budget   int
	best     string
	bestCost int
}

func newHinter(key string) *hinter {
	return &hinter{key: key, name: nameOf(key), budget: 1 + len(key)/10, bestCost: -1}
}

func nameOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}

func (h *hinter) consider(candidate string) {
	if candidate == h.key || candidate == "" {
		return
	}
	cost := levenshtein(h.key, candidate, h.budget)
	if cost > h.budget {
		if h.name == "" || nameOf(candidate) != h.name {
			return
		}
		cost = h.budget + 1 // same name, other domain: weaker than a near typo
	}
	if h.bestCost < 0 || cost < h.bestCost || (cost == h.bestCost && candidate < h.best) {
		h.best, h.bestCost = candidate, cost
	}
}

// levenshtein returns the edit distance between a and b, or any value above
// limit once it is certain to exceed limit.
func levenshtein(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
