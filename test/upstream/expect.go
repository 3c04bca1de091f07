package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Result states in the table and the expectations file.
const (
	statePassed  = "passed"
	stateFailed  = "failed"  // failed, panicked, timed out, aborted, or the stack did not start
	stateSkipped = "skipped" // the spec skipped itself (ginkgo Skip)
)

// expectation says that the specs matching Spec (a full spec text, or a
// prefix of one followed by " *") end in State, and why.
type expectation struct {
	Suite, Spec, State, Reason string
	Line                       int
}

func (e expectation) matches(s spec) bool {
	if e.Suite != s.Suite {
		return false
	}
	if p, ok := strings.CutSuffix(e.Spec, " *"); ok {
		return s.Text == p || strings.HasPrefix(s.Text, p+" ")
	}
	return s.Text == e.Spec
}

// parseExpectations reads the expectations file: one line per spec (or
// group of specs) that does not pass here,
//
//	suite | spec text, or a prefix of it followed by " *" | failed or skipped | reason
//
// Blank lines and lines starting with # are ignored. Errors name the line.
func parseExpectations(name string, b []byte) ([]expectation, error) {
	var out []expectation
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, " | ")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 fields separated by \" | \" (suite | spec | state | reason), got %d", name, n, len(f))
		}
		e := expectation{Suite: strings.TrimSpace(f[0]), Spec: strings.TrimSpace(f[1]), State: strings.TrimSpace(f[2]), Reason: strings.TrimSpace(f[3]), Line: n}
		if _, ok := suitePackages[e.Suite]; !ok {
			return nil, fmt.Errorf("%s:%d: unknown suite %q (want regression or disruption)", name, n, e.Suite)
		}
		if e.State != stateFailed && e.State != stateSkipped {
			return nil, fmt.Errorf("%s:%d: state %q: want failed or skipped (passing specs are not listed)", name, n, e.State)
		}
		if e.Spec == "" || e.Spec == "*" {
			return nil, fmt.Errorf("%s:%d: empty spec", name, n)
		}
		if e.Reason == "" {
			return nil, fmt.Errorf("%s:%d: a reason is required", name, n)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// expectFor returns the expectation of s: the longest matching line, or a
// pass when none matches.
func expectFor(exps []expectation, s spec) expectation {
	best := expectation{Suite: s.Suite, Spec: s.Text, State: statePassed}
	for _, e := range exps {
		if e.matches(s) && (best.Line == 0 || len(e.Spec) > len(best.Spec)) {
			best = e
		}
	}
	return best
}

// checkStale returns an error naming every expectation that matches none
// of specs (of suites that were listed), so the file cannot drift from the
// suites.
func checkStale(name string, exps []expectation, specs []spec, listed map[string]bool) error {
	var stale []string
	for _, e := range exps {
		if !listed[e.Suite] {
			continue
		}
		found := false
		for _, s := range specs {
			if e.matches(s) {
				found = true
				break
			}
		}
		if !found {
			stale = append(stale, fmt.Sprintf("%s:%d: %s %q matches no spec", name, e.Line, e.Suite, e.Spec))
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s", strings.Join(stale, "\n"))
	}
	return nil
}
