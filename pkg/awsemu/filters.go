package awsemu

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// filter is one EC2 Filter: Name and its Values (OR-ed). Filters are AND-ed.
type filter struct {
	Name   string
	Values []string
}

func parseFilters(p params) ([]filter, *apiError) {
	var out []filter
	for i, f := range p.Items("Filter") {
		name := f.Get("Name")
		if name == "" {
			return nil, errMissingParameter(fmt.Sprintf("Filter.%d.Name", i+1))
		}
		out = append(out, filter{Name: name, Values: f.Strings("Value")})
	}
	return out, nil
}

// fieldFunc returns the values of an object for a filter name; known is
// false for a filter name the resource does not support.
type fieldFunc func(name string) (values []string, known bool)

// checkFilterNames refuses, as EC2 does before looking at any object, a
// filter whose name the resource does not answer (fields is asked with a
// zero object; tag filters are always answered).
func checkFilterNames(filters []filter, fields fieldFunc) *apiError {
	for _, f := range filters {
		if strings.HasPrefix(f.Name, "tag:") || f.Name == "tag-key" || f.Name == "tag-value" {
			continue
		}
		if _, known := fields(f.Name); !known {
			return errUnknownFilter(f.Name)
		}
	}
	return nil
}

func errUnknownFilter(name string) *apiError {
	return newAPIError("InvalidParameterValue", 400, "The filter '%s' is invalid", name)
}

// matchUntagged is matchFilters for resources EC2 does not tag (instance
// types, offerings, zones, spot prices, instance status): their model
// documents no tag filters, so tag:KEY, tag-key and tag-value are unknown
// filters there, refused like any other.
func matchUntagged(filters []filter, fields fieldFunc) (bool, *apiError) {
	for _, f := range filters {
		if strings.HasPrefix(f.Name, "tag:") || f.Name == "tag-key" || f.Name == "tag-value" {
			return false, errUnknownFilter(f.Name)
		}
	}
	return matchFilters(filters, nil, fields)
}

// matchFilters reports whether an object passes every filter. Tag filters
// (tag:KEY, tag-key, tag-value) are answered from tags.
func matchFilters(filters []filter, tags map[string]string, fields fieldFunc) (bool, *apiError) {
	for _, f := range filters {
		var vals []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[f.Name[len("tag:"):]]; ok {
				vals = []string{v}
			}
		case f.Name == "tag-key":
			vals = sortedKeys(tags)
		case f.Name == "tag-value":
			for _, k := range sortedKeys(tags) {
				vals = append(vals, tags[k])
			}
		default:
			v, known := fields(f.Name)
			if !known {
				return false, errUnknownFilter(f.Name)
			}
			vals = v
		}
		if !anyMatch(f.Values, vals) {
			return false, nil
		}
	}
	return true, nil
}

func anyMatch(patterns, vals []string) bool {
	for _, p := range patterns {
		for _, v := range vals {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcardMatch matches EC2 filter wildcards: * is any sequence, ? any one
// character, and a backslash escapes the next character.
func wildcardMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		return pattern == s
	}
	p := []rune(pattern)
	r := []rune(s)
	// Iterative matcher with one backtracking point for the last star.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(r) {
		if pi < len(p) {
			switch {
			case p[pi] == '*':
				star, mark = pi, si
				pi++
				continue
			case p[pi] == '?':
				pi++
				si++
				continue
			case p[pi] == '\\' && pi+1 < len(p):
				if p[pi+1] == r[si] {
					pi += 2
					si++
					continue
				}
			case p[pi] == r[si]:
				pi++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		pi = star + 1
		mark++
		si = mark
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

// page is a pagination request: where to start and how many to return.
type page struct {
	start int
	size  int
}

// pageLimits are an operation's MaxResults bounds and default page size:
// min..max as botocore's EC2 service model bounds the operation's
// MaxResults shape; max 0 means the model leaves it unbounded, so any value
// from min up is accepted and a page holds at most limit items (EC2's
// documented largest page). def is the page size without MaxResults (0:
// everything).
type pageLimits struct {
	min, max, def, limit int
}

// opPageLimits are the limits of every paginated operation the emulator
// serves (checked against botocore's model by TestPageLimitsMatchBotocore).
var opPageLimits = map[string]pageLimits{
	"DescribeInstanceTypes":          {min: 5, max: 100, def: 100},
	"DescribeInstanceTypeOfferings":  {min: 5, max: 1000, def: 1000},
	"DescribeVpcs":                   {min: 5, max: 1000},
	"DescribeSubnets":                {min: 5, max: 1000},
	"DescribeSecurityGroups":         {min: 5, max: 1000},
	"DescribeImages":                 {min: 1, limit: 1000},
	"DescribeSpotPriceHistory":       {min: 1, def: 1000, limit: 1000},
	"DescribeLaunchTemplates":        {min: 1, max: 200},
	"DescribeInstances":              {min: 1, limit: 1000},
	"DescribeInstanceStatus":         {min: 1, limit: 1000},
	"DescribeCapacityReservations":   {min: 1, max: 1000},
	"DescribeCapacityBlockOfferings": {min: 1, max: 1000},
}

// parsePage validates MaxResults and NextToken for an operation. The token
// is opaque to clients; it names the operation so a token from another
// operation is rejected.
func parsePage(p params, op string) (page, *apiError) {
	lim, ok := opPageLimits[op]
	if !ok { // a programming error: add the operation to opPageLimits
		return page{}, newAPIError("InternalError", 500, "the emulator has no page limits for %s", op)
	}
	pg := page{size: lim.def}
	if n, ok, err := p.Int("MaxResults"); err != nil {
		return pg, err
	} else if ok {
		switch {
		case lim.max > 0 && (n < int64(lim.min) || n > int64(lim.max)):
			return pg, errInvalidParameterValue("MaxResults", strconv.FormatInt(n, 10),
				fmt.Sprintf("Expecting a value between %d and %d.", lim.min, lim.max))
		case lim.max == 0 && n < int64(lim.min):
			return pg, errInvalidParameterValue("MaxResults", strconv.FormatInt(n, 10),
				fmt.Sprintf("Expecting a value of at least %d.", lim.min))
		}
		pg.size = int(n)
		if lim.limit > 0 && pg.size > lim.limit {
			pg.size = lim.limit
		}
	}
	if tok := p.Get("NextToken"); tok != "" {
		start, ok := decodeToken(op, tok)
		if !ok {
			return pg, errInvalidParameterValue("NextToken", tok, "The token is invalid.")
		}
		pg.start = start
	}
	return pg, nil
}

// slice returns the bounds of this page within n items and the token for
// the next page ("" when this is the last).
func (pg page) slice(op string, n int) (from, to int, next string) {
	from = min(pg.start, n)
	to = n
	if pg.size > 0 && from+pg.size < n {
		to = from + pg.size
		next = encodeToken(op, to)
	}
	return from, to, next
}

func encodeToken(op string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(op + ":" + strconv.Itoa(offset)))
}

func decodeToken(op, tok string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	name, off, ok := strings.Cut(string(b), ":")
	if !ok || name != op {
		return 0, false
	}
	n, err := strconv.Atoi(off)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
