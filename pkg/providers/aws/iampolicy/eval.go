package iampolicy

import (
	"slices"
	"strings"
)

// Decision is the outcome of evaluating a request against documents.
type Decision struct {
	// Allowed is true when some Allow statement matched and no Deny did.
	Allowed bool
	// Statement is the Sid of the deciding statement (the Deny, or the
	// first matching Allow); "" when nothing matched (implicit deny).
	Statement string
	// AssumedConditions lists the condition operators of the deciding
	// statement, which were treated as satisfied.
	AssumedConditions []string
}

// Allows evaluates one request (an action such as "ec2:CreateFleet" and a
// resource ARN) against the documents together, as IAM evaluates the
// policies attached to one principal: an explicit Deny wins over any
// Allow, and with neither the request is denied. Conditions are treated as
// satisfied; the decision lists the ones it assumed.
func Allows(docs []Document, action, resource string) Decision {
	var allow *Statement
	for _, d := range docs {
		for i := range d.Statement {
			s := &d.Statement[i]
			if !s.matches(action, resource) {
				continue
			}
			if s.Effect == Deny {
				return Decision{Statement: s.Sid, AssumedConditions: conditionOps(s)}
			}
			if allow == nil {
				allow = s
			}
		}
	}
	if allow == nil {
		return Decision{}
	}
	return Decision{Allowed: true, Statement: allow.Sid, AssumedConditions: conditionOps(allow)}
}

// Allows evaluates a request against this document alone.
func (d Document) Allows(action, resource string) Decision {
	return Allows([]Document{d}, action, resource)
}

func conditionOps(s *Statement) []string {
	var ops []string
	for op := range s.Condition {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

func (s *Statement) matches(action, resource string) bool {
	okAction := false
	for _, a := range s.Action {
		if Match(strings.ToLower(a), strings.ToLower(action)) {
			okAction = true
			break
		}
	}
	if !okAction {
		return false
	}
	for _, r := range s.Resource {
		if Match(r, resource) {
			return true
		}
	}
	return false
}

// Match reports whether value matches an IAM pattern, in which * matches
// any run of characters (including none and including ':' and '/') and ?
// matches exactly one character. Matching is case-sensitive; callers fold
// case for actions.
func Match(pattern, value string) bool {
	// Iterative wildcard matching with single-star backtracking: linear in
	// practice, never exponential.
	p, v := 0, 0
	star, mark := -1, 0
	for v < len(value) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == value[v]):
			p++
			v++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, v
			p++
		case star >= 0:
			p = star + 1
			mark++
			v = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
