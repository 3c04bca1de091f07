package v1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Never is the NillableDuration spelling of "no duration": the event never
// happens (a node never expires, consolidation never runs).
const Never = "Never"

// ErrInvalidDuration is returned (wrapped) for a value that is neither a
// duration in hours, minutes and seconds nor "Never".
var ErrInvalidDuration = errors.New("invalid duration")

// durationPattern is the syntax the CRD schema accepts for expireAfter and
// consolidateAfter: one or more <digits><h|m|s> groups, or Never. Keep in step
// with the Pattern markers on the fields.
var durationPattern = regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)

// NillableDuration is a duration that may also be "Never". Its zero value is
// "unset" (omitted from JSON, so the apiserver applies the field's default).
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	d     time.Duration
	never bool
	set   bool
	// raw is the text the value was parsed from; it is written back as is,
	// so a read-modify-write never rewrites "60m" as "1h" (which would trip
	// the NodeClaim spec immutability rule).
	raw string
}

// NewNillableDuration returns the duration d. It is written as hours,
// minutes and seconds ("1h30m"); sub-second parts are truncated, since the
// CRD schema accepts whole seconds only.
func NewNillableDuration(d time.Duration) NillableDuration {
	d = d.Truncate(time.Second)
	return NillableDuration{d: d, set: true, raw: formatDuration(d)}
}

// NeverDuration returns the "Never" value.
func NeverDuration() NillableDuration {
	return NillableDuration{never: true, set: true, raw: Never}
}

// formatDuration writes d in the CRD syntax: "0s", "720h", "1h30m", "90s".
// Negative durations keep Go's syntax (the schema refuses them).
func formatDuration(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	if d == 0 {
		return "0s"
	}
	var out []byte
	h, rem := d/time.Hour, d%time.Hour
	m, rem := rem/time.Minute, rem%time.Minute
	s := rem / time.Second
	if h > 0 {
		out = fmt.Appendf(out, "%dh", h)
	}
	if m > 0 {
		out = fmt.Appendf(out, "%dm", m)
	}
	if s > 0 {
		out = fmt.Appendf(out, "%ds", s)
	}
	return string(out)
}

// ParseNillableDuration parses "Never" or a duration made of hour, minute and
// second groups such as "720h", "1h30m" or "0s" (the syntax the CRD schema
// accepts; fractions and other units are refused).
func ParseNillableDuration(s string) (NillableDuration, error) {
	if !durationPattern.MatchString(s) {
		return NillableDuration{}, fmt.Errorf("%w %q: want a duration such as 720h, 1h30m or 30s, or %q", ErrInvalidDuration, s, Never)
	}
	if s == Never {
		return NeverDuration(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("%w %q: %v", ErrInvalidDuration, s, err)
	}
	return NillableDuration{d: d, set: true, raw: s}, nil
}

// MustParseNillableDuration is ParseNillableDuration for constants in tests
// and defaults; it panics on a malformed literal.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Duration returns the duration and true, or 0 and false when the value is
// Never or unset.
func (n NillableDuration) Duration() (time.Duration, bool) {
	if !n.set || n.never {
		return 0, false
	}
	return n.d, true
}

// IsNever reports whether the value is "Never".
func (n NillableDuration) IsNever() bool { return n.set && n.never }

// IsZero reports whether the value is unset; encoding/json's omitzero uses
// it to leave the field out so the apiserver default applies.
func (n NillableDuration) IsZero() bool { return !n.set }

// String returns the value as written ("Never", "720h", "1h30m"), or ""
// when unset.
func (n NillableDuration) String() string {
	if !n.set {
		return ""
	}
	return n.raw
}

// MarshalJSON writes "Never", the duration as a string, or null when unset.
func (n NillableDuration) MarshalJSON() ([]byte, error) {
	if !n.set {
		return []byte("null"), nil
	}
	return json.Marshal(n.raw)
}

// UnmarshalJSON reads null (unset), "Never" or a duration string.
func (n *NillableDuration) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*n = NillableDuration{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: want a JSON string, got %s", ErrInvalidDuration, truncate(b))
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*n = parsed
	return nil
}

// ToUnstructured lets the unstructured converter (used by server-side apply
// and the dynamic client) see the same string as JSON does.
func (n NillableDuration) ToUnstructured() interface{} {
	if !n.set {
		return nil
	}
	return n.raw
}

func truncate(b []byte) string {
	const limit = 40
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}
