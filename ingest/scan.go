package ingest

import (
	"encoding/hex"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A scanner reads and checks JSON (RFC 8259) one token at a time, building
// nothing. Like RFC 8785 it requires UTF-8 and paired surrogate escapes.
// Once it fails it stays failed, at the first failure.
type scanner struct {
	data     []byte
	pos      int
	maxDepth int // how deep skip may nest
	failed   failure
	failedAt int
}

// A failure is why a body is not JSON a batch can be read from.
type failure int

const (
	ok failure = iota
	failEnd
	failChar
	failControl
	failUTF8
	failEscape
	failSurrogate // this and the failures after it are JSON
	failDepth
)

// syntax reports whether f makes the bytes no JSON at all, rather than
// JSON no batch can be.
func (f failure) syntax() bool { return f > ok && f < failSurrogate }

// message is the failure as the client reads it; it never quotes the body.
func (f failure) message() string { return failureMessages[f] }

var failureMessages = [...]string{
	failEnd:       "is not valid JSON: it ends too soon",
	failChar:      "is not valid JSON: a character that JSON does not allow there",
	failControl:   "is not valid JSON: a control character in a string (escape it)",
	failUTF8:      "is not valid UTF-8",
	failEscape:    `is not valid JSON: a malformed escape in a string`,
	failSurrogate: `holds a \u escape of half a UTF-16 surrogate pair (U+D800 to U+DFFF alone), which RFC 8785 canonical JSON cannot hold`,
	failDepth:     "nests arrays and objects deeper than a batch ever does",
}

// fail records the first failure; it returns false.
func (s *scanner) fail(f failure) bool {
	if s.failed == ok {
		s.failed, s.failedAt = f, min(s.pos, len(s.data))
	}
	return false
}

// peek skips white space and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.failed != ok {
		return false
	}
	if s.peek() != c {
		return s.unexpected()
	}
	s.pos++
	return true
}

func (s *scanner) unexpected() bool {
	if s.peek() == 0 && s.pos >= len(s.data) {
		return s.fail(failEnd)
	}
	return s.fail(failChar)
}

// str reads a string and returns its bytes between the quotes, and
// whether they hold an escape (then unescape gives its value).
func (s *scanner) str() (raw []byte, escaped, good bool) {
	if !s.consume('"') {
		return nil, false, false
	}
	d, start := s.data, s.pos
	for i := start; ; {
		for i < len(d) && d[i] >= 0x20 && d[i] < 0x80 && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) {
			s.pos = i
			return nil, false, s.fail(failEnd)
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			return d[start:i], escaped, true
		case c == '\\':
			escaped = true
			n, f := escapeLen(d[i:])
			if f != ok {
				s.pos = i
				return nil, false, s.fail(f)
			}
			i += n
		case c < 0x20:
			s.pos = i
			return nil, false, s.fail(failControl)
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				s.pos = i
				return nil, false, s.fail(failUTF8)
			}
			i += size
		}
	}
}

// escapeLen checks the escape at the start of b and returns its length.
func escapeLen(b []byte) (int, failure) {
	if len(b) < 2 {
		return 0, failEnd
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, ok
	case 'u':
	default:
		return 0, failEscape
	}
	r, f := hex4(b[2:])
	switch {
	case f != ok:
		return 0, f
	case r < 0xd800 || r > 0xdfff:
		return 6, ok
	case r >= 0xdc00: // a low surrogate first
		return 0, failSurrogate
	}
	if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
		return 0, failSurrogate // a high surrogate alone
	}
	lo, f := hex4(b[8:])
	switch {
	case f != ok:
		return 0, f
	case lo < 0xdc00 || lo > 0xdfff:
		return 0, failSurrogate
	}
	return 12, ok
}

// hex4 reads the four hex digits of a \u escape at the start of b.
func hex4(b []byte) (rune, failure) {
	if len(b) < 4 {
		return 0, failEnd
	}
	var v [2]byte
	if _, err := hex.Decode(v[:], b[:4]); err != nil {
		return 0, failEscape
	}
	return rune(v[0])<<8 | rune(v[1]), ok
}

// unescape returns the value of a string str checked.
func unescape(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			b.Write(raw[i:j])
			i = j
			continue
		}
		switch raw[i+1] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, _ := hex4(raw[i+2:])
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(raw[i+8:])
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			b.WriteRune(r)
			i += 6
			continue
		default: // '"', '\\', '/'
			b.WriteByte(raw[i+1])
		}
		i += 2
	}
	return b.String()
}

// valueChars is the length in code points of the value of a string str
// read, without building it.
func valueChars(raw []byte, escaped bool) int {
	if !escaped {
		return utf8.RuneCount(raw)
	}
	n := 0
	for i := 0; i < len(raw); n++ {
		switch {
		case raw[i] != '\\':
			_, size := utf8.DecodeRune(raw[i:])
			i += size
		case raw[i+1] != 'u':
			i += 2
		default:
			r, _ := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				i += 6
			}
		}
	}
	return n
}

// skip reads and checks one JSON value nested at depth, keeping nothing.
func (s *scanner) skip(depth int) bool {
	if s.failed != ok {
		return false
	}
	switch c := s.peek(); c {
	case '"':
		_, _, good := s.str()
		return good
	case '{', '[':
		if depth > s.maxDepth {
			return s.fail(failDepth)
		}
		end := closing[c]
		s.pos++
		if s.peek() == end {
			s.pos++
			return true
		}
		for {
			if c == '{' {
				if _, _, good := s.str(); !good || !s.consume(':') {
					return false
				}
			}
			if !s.skip(depth + 1) {
				return false
			}
			switch s.peek() {
			case ',':
				s.pos++
			case end:
				s.pos++
				return true
			default:
				return s.unexpected()
			}
		}
	case 't', 'f', 'n':
		return s.literal(literals[c])
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return s.number()
	}
	return s.unexpected()
}

var (
	closing  = [...]byte{'{': '}', '[': ']'}
	literals = [...]string{'t': "true", 'f': "false", 'n': "null"}
)

func (s *scanner) literal(lit string) bool {
	for i := 0; i < len(lit); i++ {
		if s.pos >= len(s.data) {
			return s.fail(failEnd)
		}
		if s.data[s.pos] != lit[i] {
			return s.fail(failChar)
		}
		s.pos++
	}
	return true
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	d := s.data
	if d[s.pos] == '-' {
		s.pos++
	}
	if byteAt(d, s.pos) == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return s.noDigit()
	}
	if byteAt(d, s.pos) == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.noDigit()
		}
	}
	if c := byteAt(d, s.pos); c == 'e' || c == 'E' {
		s.pos++
		if c := byteAt(d, s.pos); c == '+' || c == '-' {
			s.pos++
		}
		if s.digits() == 0 {
			return s.noDigit()
		}
	}
	return true
}

// byteAt is d[i], or 0 past the end of d.
func byteAt(d []byte, i int) byte {
	if i < len(d) {
		return d[i]
	}
	return 0
}

func (s *scanner) digits() int {
	d, i := s.data, s.pos
	for i < len(d) && d[i]-'0' <= 9 {
		i++
	}
	n := i - s.pos
	s.pos = i
	return n
}

func (s *scanner) noDigit() bool {
	if s.pos >= len(s.data) {
		return s.fail(failEnd)
	}
	return s.fail(failChar)
}
