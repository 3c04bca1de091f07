package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"web-7f9c", "web-7f9c"},
		{"café-µs", "café-µs"},
		{"a b\u00a0c", "a b\u00a0c"},
		{"x\x1b]0;owned\x07y", `x\x1b]0;owned\x07y`},
		{"\x1b[2Jclear", `\x1b[2Jclear`},
		{"name\r\nTOTAL\t1", `name\r\nTOTAL\t1`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"rtl\u202eevil", `rtl\u202eevil`},
		{"zw\u200bj", `zw\u200bj`},
		{"ls\u2028x", `ls\u2028x`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"nul\x00", `nul\x00`},
		{"tag\U000e0041", `tag\U000e0041`},
	} {
		got := Escape(tc.in)
		if got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, c := range []byte(got) {
			if c < 0x20 || c == 0x7f {
				t.Errorf("Escape(%q) = %q keeps control byte %#x", tc.in, got, c)
			}
		}
		if !utf8.ValidString(got) {
			t.Errorf("Escape(%q) = %q is not valid UTF-8", tc.in, got)
		}
	}
}

func TestEscapeKeepsPlainStringsUnallocated(t *testing.T) {
	s := "default/web-0"
	if n := testing.AllocsPerRun(100, func() { _ = Escape(s) }); n != 0 {
		t.Fatalf("Escape of a plain string allocates %v times", n)
	}
}

func TestMessage(t *testing.T) {
	got := Message("first line\nsecond \x1b[31mred\x1b[0m\rforged")
	want := "first line\nsecond \\x1b[31mred\\x1b[0m\\rforged"
	if got != want {
		t.Fatalf("Message = %q, want %q", got, want)
	}
	huge := "value: " + strings.Repeat("v", 10<<20)
	got = Message(huge)
	if len(got) > MaxLine+100 {
		t.Fatalf("Message of a 10 MiB line is %d bytes, want at most about %d", len(got), MaxLine)
	}
	if !strings.HasPrefix(got, "value: vvv") || !strings.Contains(got, "more bytes") {
		t.Fatalf("Message of a 10 MiB line = %.100q..., want its start and a note of the cut", got)
	}
	many := strings.Repeat(strings.Repeat("x", MaxLine)+"\n", 1000)
	got = Message(many)
	if len(got) > MaxMessage+MaxLine+200 {
		t.Fatalf("Message of %d bytes is %d bytes, want at most about %d", len(many), len(got), MaxMessage)
	}
	if !strings.Contains(got, "more bytes not shown") {
		t.Fatalf("Message of %d bytes does not say it was cut", len(many))
	}
}

func TestClip(t *testing.T) {
	if got := Clip("short", 10); got != "short" {
		t.Fatalf("Clip(short) = %q", got)
	}
	got := Clip(strings.Repeat("é", 100), 11)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "ééééé...") || !strings.Contains(got, "(190 more bytes)") {
		t.Fatalf("Clip = %q, want 5 whole characters and the 190 bytes left out", got)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\r\nb", "\xff\xfe", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Escape(s), Message(s)} {
			for i := 0; i < len(got); i++ {
				if c := got[i]; (c < 0x20 && c != '\n') || c == 0x7f {
					t.Fatalf("escaped %q to %q, which keeps control byte %#x", s, got, c)
				}
			}
			if !utf8.ValidString(got) {
				t.Fatalf("escaped %q to invalid UTF-8 %q", s, got)
			}
		}
		if e := Escape(s); strings.Contains(e, "\n") {
			t.Fatalf("Escape(%q) = %q keeps a line break", s, e)
		}
	})
}
