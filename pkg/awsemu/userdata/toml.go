package userdata

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The TOML subset Bottlerocket user data uses: tables ([a.b."c"]), arrays
// of tables, dotted and quoted keys, basic/literal/multi-line strings,
// integers, floats, booleans, arrays (across lines) and inline tables.
// Dates are not supported. Errors carry the line.

type tomlValue struct {
	line int
	val  any // string, int64, float64, bool, []*tomlValue, tomlTable
}

type tomlTable map[string]*tomlValue

type tomlParser struct {
	s    string
	pos  int
	line int
}

type tomlError struct {
	line int
	msg  string
}

func (e *tomlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (p *tomlParser) fail(format string, args ...any) error {
	return &tomlError{line: p.line, msg: fmt.Sprintf(format, args...)}
}

func parseTOML(s string) (tomlTable, error) {
	p := &tomlParser{s: s, line: 1}
	root := tomlTable{}
	cur := root
	defined := map[string]bool{}
	for {
		p.skipBlankLines()
		if p.pos >= len(p.s) {
			return root, nil
		}
		if p.s[p.pos] == '[' {
			hdrLine := p.line
			array := strings.HasPrefix(p.s[p.pos:], "[[")
			if array {
				p.pos += 2
			} else {
				p.pos++
			}
			p.skipSpaces()
			keys, err := p.key()
			if err != nil {
				return nil, err
			}
			p.skipSpaces()
			closer := "]"
			if array {
				closer = "]]"
			}
			if !strings.HasPrefix(p.s[p.pos:], closer) {
				return nil, p.fail("expected %s after the table name", closer)
			}
			p.pos += len(closer)
			if err := p.endOfLine(); err != nil {
				return nil, err
			}
			if array {
				cur, err = p.appendTableArray(root, keys)
			} else {
				name := strings.Join(keys, "\x00")
				if defined[name] {
					return nil, &tomlError{line: hdrLine, msg: fmt.Sprintf("table [%s] is defined twice", strings.Join(keys, "."))}
				}
				defined[name] = true
				cur, err = p.descend(root, keys, true)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if err := p.keyValue(cur); err != nil {
			return nil, err
		}
		if err := p.endOfLine(); err != nil {
			return nil, err
		}
	}
}

// descend walks (creating) nested tables along keys.
func (p *tomlParser) descend(t tomlTable, keys []string, create bool) (tomlTable, error) {
	for _, k := range keys {
		v, ok := t[k]
		if !ok {
			if !create {
				return nil, p.fail("no table %s", k)
			}
			nt := tomlTable{}
			t[k] = &tomlValue{line: p.line, val: nt}
			t = nt
			continue
		}
		switch x := v.val.(type) {
		case tomlTable:
			t = x
		case []*tomlValue:
			if len(x) == 0 {
				return nil, p.fail("key %s is an empty array, not a table", k)
			}
			last, ok := x[len(x)-1].val.(tomlTable)
			if !ok {
				return nil, p.fail("key %s is an array of values, not of tables", k)
			}
			t = last
		default:
			return nil, p.fail("key %s is already a value (line %d), not a table", k, v.line)
		}
	}
	return t, nil
}

func (p *tomlParser) appendTableArray(root tomlTable, keys []string) (tomlTable, error) {
	parent, err := p.descend(root, keys[:len(keys)-1], true)
	if err != nil {
		return nil, err
	}
	k := keys[len(keys)-1]
	nt := tomlTable{}
	v, ok := parent[k]
	if !ok {
		parent[k] = &tomlValue{line: p.line, val: []*tomlValue{{line: p.line, val: nt}}}
		return nt, nil
	}
	arr, ok := v.val.([]*tomlValue)
	if !ok {
		return nil, p.fail("key %s is already defined (line %d)", k, v.line)
	}
	v.val = append(arr, &tomlValue{line: p.line, val: nt})
	return nt, nil
}

func (p *tomlParser) keyValue(t tomlTable) error {
	line := p.line
	keys, err := p.key()
	if err != nil {
		return err
	}
	p.skipSpaces()
	if p.pos >= len(p.s) || p.s[p.pos] != '=' {
		return p.fail("expected = after key %s", strings.Join(keys, "."))
	}
	p.pos++
	p.skipSpaces()
	v, err := p.value()
	if err != nil {
		return err
	}
	v.line = line
	parent, err := p.descend(t, keys[:len(keys)-1], true)
	if err != nil {
		return err
	}
	last := keys[len(keys)-1]
	if old, dup := parent[last]; dup {
		return p.fail("key %s is defined twice (first on line %d)", strings.Join(keys, "."), old.line)
	}
	parent[last] = v
	return nil
}

func (p *tomlParser) skipSpaces() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *tomlParser) skipComment() {
	if p.pos < len(p.s) && p.s[p.pos] == '#' {
		for p.pos < len(p.s) && p.s[p.pos] != '\n' {
			p.pos++
		}
	}
}

// skipBlankLines skips whitespace, comments and newlines.
func (p *tomlParser) skipBlankLines() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\r':
			p.pos++
		case '\n':
			p.pos++
			p.line++
		case '#':
			p.skipComment()
		default:
			return
		}
	}
}

func (p *tomlParser) endOfLine() error {
	p.skipSpaces()
	p.skipComment()
	if p.pos < len(p.s) && p.s[p.pos] == '\r' {
		p.pos++
	}
	if p.pos >= len(p.s) {
		return nil
	}
	if p.s[p.pos] != '\n' {
		return p.fail("unexpected %q after the value", p.s[p.pos])
	}
	p.pos++
	p.line++
	return nil
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// key reads a dotted key of bare or quoted parts.
func (p *tomlParser) key() ([]string, error) {
	var keys []string
	for {
		p.skipSpaces()
		if p.pos >= len(p.s) {
			return nil, p.fail("expected a key")
		}
		switch c := p.s[p.pos]; {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			keys = append(keys, s)
		case isBare(c):
			start := p.pos
			for p.pos < len(p.s) && isBare(p.s[p.pos]) {
				p.pos++
			}
			keys = append(keys, p.s[start:p.pos])
		default:
			return nil, p.fail("unexpected %q where a key should be", c)
		}
		p.skipSpaces()
		if p.pos < len(p.s) && p.s[p.pos] == '.' {
			p.pos++
			continue
		}
		return keys, nil
	}
}

func (p *tomlParser) value() (*tomlValue, error) {
	if p.pos >= len(p.s) {
		return nil, p.fail("expected a value")
	}
	line := p.line
	switch c := p.s[p.pos]; {
	case c == '"' || c == '\'':
		s, err := p.str()
		return &tomlValue{line: line, val: s}, err
	case c == '[':
		return p.array()
	case c == '{':
		return p.inlineTable()
	case strings.HasPrefix(p.s[p.pos:], "true") && !p.bareAfter(4):
		p.pos += 4
		return &tomlValue{line: line, val: true}, nil
	case strings.HasPrefix(p.s[p.pos:], "false") && !p.bareAfter(5):
		p.pos += 5
		return &tomlValue{line: line, val: false}, nil
	case c == '+' || c == '-' || c >= '0' && c <= '9' || c == 'i' || c == 'n':
		start := p.pos
		for p.pos < len(p.s) && strings.IndexByte("+-0123456789._eExobabcdefABCDEFinf", p.s[p.pos]) >= 0 {
			p.pos++
		}
		lit := strings.ReplaceAll(p.s[start:p.pos], "_", "")
		if n, err := strconv.ParseInt(lit, 0, 64); err == nil {
			return &tomlValue{line: line, val: n}, nil
		}
		if f, err := strconv.ParseFloat(lit, 64); err == nil {
			return &tomlValue{line: line, val: f}, nil
		}
		return nil, p.fail("%q is not a number (dates are not supported)", p.s[start:p.pos])
	}
	return nil, p.fail("unexpected %q where a value should be", p.s[p.pos])
}

func (p *tomlParser) bareAfter(n int) bool {
	return p.pos+n < len(p.s) && isBare(p.s[p.pos+n])
}

func (p *tomlParser) array() (*tomlValue, error) {
	line := p.line
	p.pos++ // [
	var items []*tomlValue
	for {
		p.skipBlankLines()
		if p.pos >= len(p.s) {
			return nil, &tomlError{line: line, msg: "unterminated array"}
		}
		if p.s[p.pos] == ']' {
			p.pos++
			return &tomlValue{line: line, val: items}, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.skipBlankLines()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		p.skipBlankLines()
		if p.pos >= len(p.s) || p.s[p.pos] != ']' {
			return nil, p.fail("expected , or ] in the array started on line %d", line)
		}
	}
}

func (p *tomlParser) inlineTable() (*tomlValue, error) {
	line := p.line
	p.pos++ // {
	t := tomlTable{}
	p.skipSpaces()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return &tomlValue{line: line, val: t}, nil
	}
	for {
		p.skipSpaces()
		if err := p.keyValue(t); err != nil {
			return nil, err
		}
		p.skipSpaces()
		if p.pos >= len(p.s) {
			return nil, &tomlError{line: line, msg: "unterminated inline table"}
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return &tomlValue{line: line, val: t}, nil
		default:
			return nil, p.fail("expected , or } in the inline table")
		}
	}
}

// str reads a basic, literal or multi-line string.
func (p *tomlParser) str() (string, error) {
	q := p.s[p.pos]
	multi := strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3))
	if multi {
		p.pos += 3
		if strings.HasPrefix(p.s[p.pos:], "\n") {
			p.pos++
			p.line++
		} else if strings.HasPrefix(p.s[p.pos:], "\r\n") {
			p.pos += 2
			p.line++
		}
	} else {
		p.pos++
	}
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if multi && strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3)) {
			p.pos += 3
			return b.String(), nil
		}
		if !multi && c == q {
			p.pos++
			return b.String(), nil
		}
		if c == '\n' {
			if !multi {
				return "", p.fail("newline in a single-line string")
			}
			p.line++
		}
		if c == '\\' && q == '"' {
			r, n, err := p.escape()
			if err != nil {
				return "", err
			}
			b.WriteString(r)
			p.pos += n
			continue
		}
		b.WriteByte(c)
		p.pos++
	}
	return "", p.fail("unterminated string")
}

// escape decodes the escape at p.pos; n is its length.
func (p *tomlParser) escape() (string, int, error) {
	if p.pos+1 >= len(p.s) {
		return "", 0, p.fail("unterminated escape")
	}
	switch c := p.s[p.pos+1]; c {
	case 'b':
		return "\b", 2, nil
	case 't':
		return "\t", 2, nil
	case 'n':
		return "\n", 2, nil
	case 'f':
		return "\f", 2, nil
	case 'r':
		return "\r", 2, nil
	case '"':
		return "\"", 2, nil
	case '\\':
		return "\\", 2, nil
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if p.pos+2+n > len(p.s) {
			return "", 0, p.fail("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.s[p.pos+2:p.pos+2+n], 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return "", 0, p.fail("bad \\%c escape %q", c, p.s[p.pos+2:p.pos+2+n])
		}
		return string(rune(v)), 2 + n, nil
	case '\n', ' ', '\t', '\r':
		// line-ending backslash in a multi-line string: trim whitespace
		i := p.pos + 1
		for i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[i]) >= 0 {
			if p.s[i] == '\n' {
				p.line++
			}
			i++
		}
		return "", i - p.pos, nil
	}
	return "", 0, p.fail("unknown escape \\%c", p.s[p.pos+1])
}
