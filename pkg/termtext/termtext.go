package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every byte or character a terminal could act on
// written as a visible escape: C0 controls (tab, CR, LF, ESC, ...), DEL,
// C1 controls, Unicode format characters (bidirectional overrides,
// zero-width joiners), line and paragraph separators, and invalid UTF-8
// bytes. Printable text, including non-ASCII letters, is kept; a string
// that needs no escaping is returned as it is.
func Escape(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	escapeTo(&b, s)
	return b.String()
}

// plain reports whether s is printable ASCII only (the common case).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func escapeTo(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(b, `\x%02x`, c)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(b, `\x%02x`, r)
		case unsafeRune(r):
			if r > 0xffff {
				fmt.Fprintf(b, `\U%08x`, r)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// unsafeRune reports whether a non-ASCII rune is one a terminal may act on
// or that hides or reorders text: anything not graphic (C1 controls,
// format characters such as bidirectional overrides, line and paragraph
// separators, private use and unassigned code points).
func unsafeRune(r rune) bool { return !unicode.IsGraphic(r) }

// Limits of Message.
const (
	// MaxLine is how much of one line Message prints, in bytes (before
	// escaping).
	MaxLine = 2048
	// MaxMessage is how much of a whole message Message prints, in bytes.
	MaxMessage = 64 << 10
)

// Message escapes a message that may span lines (an error's text, a
// warning): each line is escaped as by Escape and cut at MaxLine bytes,
// and the whole at MaxMessage bytes, each cut saying how much was left
// out. Line breaks stay line breaks.
func Message(s string) string {
	if len(s) <= MaxLine && plain(s) {
		return s
	}
	var b strings.Builder
	rest := s
	for first := true; ; first = false {
		line, after, more := strings.Cut(rest, "\n")
		if !first {
			b.WriteByte('\n')
		}
		if b.Len() >= MaxMessage {
			fmt.Fprintf(&b, "... (%d more bytes not shown)", len(rest))
			break
		}
		escapeTo(&b, Clip(line, MaxLine))
		if !more {
			break
		}
		rest = after
	}
	return b.String()
}

// Clip returns s when it is at most n bytes long; otherwise its first n
// bytes (never splitting a UTF-8 character) and a note of how many bytes
// were left out. Errors use it for a value they echo, so a refused
// 10 MiB value is not printed whole.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	k := n
	for k > 0 && k < len(s) && !utf8.RuneStart(s[k]) {
		k--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:k], len(s)-k)
}
