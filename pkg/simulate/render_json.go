package simulate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// writeJSON writes r exactly as json.MarshalIndent(r, "", "  ") and a
// newline would, in one pass and without building the document in memory
// twice: a plan of 100,000 pods is tens of megabytes (every NodeClaim
// lists its instance-type options), and the generic encoder's indent pass
// costs more than the solve. A price or duration that is NaN or infinite is
// an error, as with encoding/json. TestWriteJSONMatchesEncodingJSON holds
// the two to the same bytes.
func writeJSON(w io.Writer, r *Result) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	e := &jsonWriter{w: bw}
	var lastOptions []string
	var lastOptionsJSON []byte
	e.raw("{\n")
	e.key(1, "nodeClaims")
	e.list(1, len(r.NodeClaims), r.NodeClaims == nil, func(i int) {
		c := &r.NodeClaims[i]
		e.raw("{\n")
		e.key(3, "name")
		e.str(c.Name)
		e.raw(",\n")
		e.key(3, "nodePool")
		e.str(c.NodePool)
		e.raw(",\n")
		e.key(3, "instanceType")
		e.str(c.InstanceType)
		e.raw(",\n")
		e.key(3, "instanceTypeOptions")
		// NodeClaims of one class list the same options: write them once
		// and copy the bytes.
		if c.InstanceTypeOptions != nil && lastOptions != nil && slices.Equal(c.InstanceTypeOptions, lastOptions) {
			e.rawBytes(lastOptionsJSON)
		} else {
			start := e.mark()
			e.strings(3, c.InstanceTypeOptions)
			lastOptions, lastOptionsJSON = c.InstanceTypeOptions, e.since(start)
		}
		e.raw(",\n")
		e.key(3, "capacityType")
		e.str(c.CapacityType)
		e.raw(",\n")
		e.key(3, "zone")
		e.str(c.Zone)
		e.raw(",\n")
		e.key(3, "pricePerHour")
		e.float(c.PricePerHour)
		e.raw(",\n")
		e.key(3, "pods")
		e.strings(3, c.Pods)
		if c.Static {
			e.raw(",\n")
			e.key(3, "static")
			e.raw("true")
		}
		e.raw("\n")
		e.indent(2)
		e.raw("}")
	})
	e.raw(",\n")
	e.key(1, "existingNodes")
	e.list(1, len(r.ExistingNodes), r.ExistingNodes == nil, func(i int) {
		n := &r.ExistingNodes[i]
		e.raw("{\n")
		e.key(3, "name")
		e.str(n.Name)
		e.raw(",\n")
		e.key(3, "pods")
		e.strings(3, n.Pods)
		e.raw("\n")
		e.indent(2)
		e.raw("}")
	})
	e.raw(",\n")
	e.key(1, "unschedulable")
	e.list(1, len(r.Unschedulable), r.Unschedulable == nil, func(i int) {
		u := &r.Unschedulable[i]
		e.raw("{\n")
		e.key(3, "pod")
		e.str(u.Pod)
		e.raw(",\n")
		e.key(3, "code")
		e.str(u.Code)
		e.raw(",\n")
		e.key(3, "reason")
		e.str(u.Reason)
		e.raw("\n")
		e.indent(2)
		e.raw("}")
	})
	e.raw(",\n")
	if len(r.Buffers) > 0 {
		// Few and small: encoding/json writes them.
		data, err := json.MarshalIndent(r.Buffers, "  ", "  ")
		if err != nil {
			return err
		}
		e.key(1, "buffers")
		e.rawBytes(data)
		e.raw(",\n")
	}
	if len(r.StaticPools) > 0 {
		data, err := json.MarshalIndent(r.StaticPools, "  ", "  ")
		if err != nil {
			return err
		}
		e.key(1, "staticPools")
		e.rawBytes(data)
		e.raw(",\n")
	}
	e.key(1, "totalPricePerHour")
	e.float(r.TotalPricePerHour)
	e.raw(",\n")
	e.key(1, "lowerBoundPricePerHour")
	e.float(r.LowerBoundPricePerHour)
	e.raw(",\n")
	e.key(1, "durationSeconds")
	e.float(r.DurationSeconds)
	e.raw("\n}\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type jsonWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
	// capturing copies what is written into captured (mark, since).
	capturing bool
	captured  []byte
}

func (e *jsonWriter) raw(s string) {
	if e.capturing {
		e.captured = append(e.captured, s...)
	}
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *jsonWriter) rawBytes(b []byte) {
	if e.capturing {
		e.captured = append(e.captured, b...)
	}
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

// mark starts copying what is written; since stops and returns the copy.
func (e *jsonWriter) mark() struct{} {
	e.capturing, e.captured = true, e.captured[:0]
	return struct{}{}
}

func (e *jsonWriter) since(struct{}) []byte {
	e.capturing = false
	return append([]byte(nil), e.captured...)
}

func (e *jsonWriter) indent(level int) {
	for range level {
		e.raw("  ")
	}
}

// key writes `"name": ` at the indentation level.
func (e *jsonWriter) key(level int, name string) {
	e.indent(level)
	e.str(name)
	e.raw(": ")
}

// list writes a list at level (its opening bracket already placed), item i
// written by item at level+1.
func (e *jsonWriter) list(level, n int, isNil bool, item func(i int)) {
	switch {
	case isNil:
		e.raw("null")
		return
	case n == 0:
		e.raw("[]")
		return
	}
	e.raw("[\n")
	for i := range n {
		e.indent(level + 1)
		item(i)
		if i < n-1 {
			e.raw(",")
		}
		e.raw("\n")
	}
	e.indent(level)
	e.raw("]")
}

func (e *jsonWriter) strings(level int, ss []string) {
	e.list(level, len(ss), ss == nil, func(i int) { e.str(ss[i]) })
}

// str writes s quoted as encoding/json does (HTML characters, U+2028
// and U+2029 escaped; invalid UTF-8 as U+FFFD).
func (e *jsonWriter) str(s string) {
	e.buf = appendJSONString(e.buf[:0], s)
	e.rawBytes(e.buf)
}

const hexDigits = "0123456789abcdef"

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// float writes f as encoding/json does; NaN and infinities are errors.
func (e *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if e.err == nil {
			e.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(e.buf[:0], f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.buf = b
	e.rawBytes(b)
}
