package v1_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

func TestParseNillableDuration(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		never   bool
		wantErr bool
	}{
		{name: "hours", in: "720h", want: 720 * time.Hour},
		{name: "hours and minutes", in: "1h30m", want: 90 * time.Minute},
		{name: "seconds", in: "30s", want: 30 * time.Second},
		{name: "zero", in: "0s", want: 0},
		{name: "all units", in: "1h2m3s", want: time.Hour + 2*time.Minute + 3*time.Second},
		{name: "never", in: "Never", never: true},
		{name: "words", in: "5 minutes", wantErr: true},
		{name: "forever", in: "forever", wantErr: true},
		{name: "lower-case never", in: "never", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "fraction", in: "1.5h", wantErr: true},
		{name: "milliseconds", in: "100ms", wantErr: true},
		{name: "days", in: "1d", wantErr: true},
		{name: "negative", in: "-1h", wantErr: true},
		{name: "bare number", in: "10", wantErr: true},
		{name: "overflow", in: "99999999999999h", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := karpv1.ParseNillableDuration(tt.in)
			if tt.wantErr {
				if !errors.Is(err, karpv1.ErrInvalidDuration) {
					t.Fatalf("Parse(%q) error = %v, want ErrInvalidDuration", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got.IsNever() != tt.never {
				t.Errorf("IsNever = %v, want %v", got.IsNever(), tt.never)
			}
			d, ok := got.Duration()
			if ok == tt.never || d != tt.want {
				t.Errorf("Duration() = %v, %v; want %v, %v", d, ok, tt.want, !tt.never)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want the input %q", got.String(), tt.in)
			}
		})
	}
}

func TestNillableDurationJSON(t *testing.T) {
	type wrapper struct {
		D karpv1.NillableDuration `json:"d,omitempty,omitzero"`
	}
	tests := []struct {
		name  string
		json  string
		never bool
		unset bool
		want  time.Duration
	}{
		{name: "duration", json: `{"d":"720h"}`, want: 720 * time.Hour},
		{name: "spelling kept", json: `{"d":"60m"}`, want: time.Hour},
		{name: "never", json: `{"d":"Never"}`, never: true},
		{name: "absent", json: `{}`, unset: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w wrapper
			if err := json.Unmarshal([]byte(tt.json), &w); err != nil {
				t.Fatal(err)
			}
			if w.D.IsZero() != tt.unset || w.D.IsNever() != tt.never {
				t.Fatalf("unset=%v never=%v, want %v %v", w.D.IsZero(), w.D.IsNever(), tt.unset, tt.never)
			}
			if d, ok := w.D.Duration(); ok && d != tt.want {
				t.Errorf("Duration() = %v, want %v", d, tt.want)
			}
			out, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.json {
				t.Errorf("round trip: %s, want %s", out, tt.json)
			}
		})
	}
	t.Run("null is unset", func(t *testing.T) {
		var w wrapper
		if err := json.Unmarshal([]byte(`{"d":null}`), &w); err != nil || !w.D.IsZero() {
			t.Fatalf("null: err=%v unset=%v", err, w.D.IsZero())
		}
	})
	t.Run("bad input names the value", func(t *testing.T) {
		for _, in := range []string{`{"d":"forever"}`, `{"d":5}`, `{"d":{}}`} {
			var w wrapper
			err := json.Unmarshal([]byte(in), &w)
			if !errors.Is(err, karpv1.ErrInvalidDuration) {
				t.Errorf("%s: error %v, want ErrInvalidDuration", in, err)
			}
		}
	})
}

func TestNewNillableDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{90 * time.Minute, "1h30m"},
		{720 * time.Hour, "720h"},
		{time.Hour + time.Second, "1h1s"},
		{1500 * time.Millisecond, "1s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := karpv1.NewNillableDuration(tt.in)
			if got.String() != tt.want {
				t.Errorf("String() = %q, want %q", got.String(), tt.want)
			}
			// What NewNillableDuration writes must parse back to the same
			// (truncated) duration.
			back, err := karpv1.ParseNillableDuration(got.String())
			if err != nil {
				t.Fatalf("written form %q does not parse: %v", got.String(), err)
			}
			d, _ := back.Duration()
			if d != tt.in.Truncate(time.Second) {
				t.Errorf("parsed back %v, want %v", d, tt.in.Truncate(time.Second))
			}
		})
	}
	if !karpv1.NeverDuration().IsNever() || karpv1.NeverDuration().String() != karpv1.Never {
		t.Error("NeverDuration is not Never")
	}
}

// schemaPattern is the pattern on the expireAfter/consolidateAfter fields of
// the CRDs, written out independently of the parser.
var schemaPattern = regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)

// FuzzParseNillableDuration checks that the parser never panics, accepts
// exactly what the CRD pattern accepts (unless the number overflows), and
// that everything it accepts survives a JSON round trip.
func FuzzParseNillableDuration(f *testing.F) {
	for _, s := range []string{"720h", "1h30m", "0s", "Never", "never", "5 minutes", "forever", "", "1.5h", "-1h", "99999999999999999h", "1h1h", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := karpv1.ParseNillableDuration(s)
		if err != nil {
			if !errors.Is(err, karpv1.ErrInvalidDuration) {
				t.Fatalf("error %v does not wrap ErrInvalidDuration", err)
			}
			if schemaPattern.MatchString(s) {
				if _, perr := time.ParseDuration(s); perr == nil {
					t.Fatalf("%q matches the schema and parses as a Go duration but was refused: %v", s, err)
				}
			}
			return
		}
		if !schemaPattern.MatchString(s) {
			t.Fatalf("%q accepted but the CRD schema refuses it", s)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back karpv1.NillableDuration
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-reading %s: %v", b, err)
		}
		if back != d {
			t.Fatalf("round trip changed %#v to %#v", d, back)
		}
	})
}

func ExampleNillableDuration() {
	for _, s := range []string{"720h", "Never"} {
		d, err := karpv1.ParseNillableDuration(s)
		if err != nil {
			panic(err)
		}
		if v, ok := d.Duration(); ok {
			fmt.Println(s, "->", v)
		} else {
			fmt.Println(s, "-> never")
		}
	}
	_, err := karpv1.ParseNillableDuration("5 minutes")
	fmt.Println(err)
	// Output:
	// 720h -> 720h0m0s
	// Never -> never
	// invalid duration "5 minutes": want a duration such as 720h, 1h30m or 30s, or "Never"
}
