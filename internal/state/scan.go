package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// scanner is a small streaming JSON reader made for state files: it decodes
// the handful of fields CAPTF needs and skips everything else byte by byte,
// without building values, so resource attributes are never parsed and the
// memory it holds is its buffer plus whatever it was asked to capture.
type scanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	base int64 // stream offset of buf[0]
	eof  bool
	rerr error // sticky error from the source (never io.EOF)

	capturing   bool
	capStart    int
	capBuf      []byte
	capLimit    int  // 0: no limit
	capOverflow bool // the capture passed capLimit and was dropped
	capOwn      bool // a limited capture into a buffer of its own
	scratch     []byte
}

const (
	scanBufSize = 64 << 10
	// maxDepth bounds nesting, as encoding/json does, so a hostile state
	// cannot exhaust the stack.
	maxDepth = 10000
	// maxNameLen bounds the strings the scanner decodes (field names, output
	// names, lineage, version, mode); no valid state has longer ones.
	maxNameLen = 4096
)

// syntaxError is a JSON problem at an offset of the decompressed stream.
type syntaxError struct {
	msg    string
	offset int64
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.offset) }

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, scanBufSize)}
}

func (s *scanner) offset() int64 { return s.base + int64(s.pos) }

func (s *scanner) syntax(format string, args ...any) error {
	return &syntaxError{msg: fmt.Sprintf(format, args...), offset: s.offset()}
}

// fill reads more input into the buffer; false means there is none (end of
// stream, or a source error kept in rerr).
func (s *scanner) fill() bool {
	if s.eof || s.rerr != nil {
		return false
	}
	if s.capturing {
		if s.capLimit > 0 && len(s.capBuf)+s.end-s.capStart > s.capLimit {
			s.capOverflow = true
			s.capBuf = nil
		} else if !s.capOverflow {
			s.capBuf = append(s.capBuf, s.buf[s.capStart:s.end]...)
		}
		s.capStart = 0
	}
	s.base += int64(s.end)
	s.pos, s.end = 0, 0
	for s.end == 0 {
		n, err := s.r.Read(s.buf)
		s.end = n
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.eof = true
			} else {
				s.rerr = err
			}
			break
		}
	}
	return s.end > 0
}

// unexpectedEnd reports the end of input inside a value: the source's error
// if it failed, else a syntax error.
func (s *scanner) unexpectedEnd() error {
	if s.rerr != nil {
		return s.rerr
	}
	return s.syntax("unexpected end of state JSON")
}

// startCapture starts recording the bytes consumed from now on; limit > 0
// drops a recording that grows past it and records into a scratch buffer
// reused by the next capture, limit 0 into a buffer of its own.
func (s *scanner) startCapture(limit int) {
	s.capturing = true
	s.capStart = s.pos
	s.capBuf = nil
	if limit > 0 {
		s.capBuf = s.scratch[:0]
	}
	s.capLimit = limit
	s.capOverflow = false
}

// endCapture returns what was recorded, or nil if it passed its limit.
func (s *scanner) endCapture() []byte {
	s.capturing = false
	if s.capOverflow || (s.capLimit > 0 && len(s.capBuf)+s.pos-s.capStart > s.capLimit) {
		s.capBuf = nil
		s.capOwn = false
		return nil
	}
	out := append(s.capBuf, s.buf[s.capStart:s.pos]...)
	s.capBuf = nil
	if s.capLimit > 0 && !s.capOwn {
		s.scratch = out[:0]
	}
	s.capOwn = false
	return out[:len(out):len(out)]
}

// peekNonSpace skips whitespace and returns the next byte without consuming
// it; at the end of input it returns io.EOF (or the source error).
func (s *scanner) peekNonSpace() (byte, error) {
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				return c, nil
			}
			s.pos++
		}
		if !s.fill() {
			if s.rerr != nil {
				return 0, s.rerr
			}
			return 0, io.EOF
		}
	}
}

// next returns the next non-space byte, failing at the end of input.
func (s *scanner) next() (byte, error) {
	c, err := s.peekNonSpace()
	if errors.Is(err, io.EOF) {
		return 0, s.unexpectedEnd()
	}
	return c, err
}

func (s *scanner) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		return s.syntax("expected %q", want)
	}
	s.pos++
	return nil
}

// rawByte consumes one byte, whitespace included.
func (s *scanner) rawByte() (byte, error) {
	if s.pos == s.end && !s.fill() {
		return 0, s.unexpectedEnd()
	}
	c := s.buf[s.pos]
	s.pos++
	return c, nil
}

// stopInString marks the bytes that end the fast path of a string scan.
var stopInString = func() (t [256]bool) {
	for i := range 0x20 {
		t[i] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// skipString consumes a string whose opening quote is the next byte,
// validating escapes and rejecting control characters.
func (s *scanner) skipString() error {
	s.pos++ // opening quote, already peeked
	for {
		b := s.buf[s.pos:s.end]
		i := 0
		for i < len(b) && !stopInString[b[i]] {
			i++
		}
		s.pos += i
		if i == len(b) {
			if !s.fill() {
				return s.unexpectedEnd()
			}
			continue
		}
		switch c := b[i]; c {
		case '"':
			s.pos++
			return nil
		case '\\':
			s.pos++
			e, err := s.rawByte()
			if err != nil {
				return err
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					h, err := s.rawByte()
					if err != nil {
						return err
					}
					if !isHex(h) {
						return s.syntax("invalid \\u escape in string")
					}
				}
			default:
				return s.syntax("invalid escape in string")
			}
		default:
			return s.syntax("control character in string")
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// readName decodes a string of at most maxNameLen bytes into the scanner's
// scratch space: the result is valid until the next capture. The second
// result is false, and the string skipped, when it is longer.
func (s *scanner) readName() ([]byte, bool, error) {
	c, err := s.next()
	if err != nil {
		return nil, false, err
	}
	if c != '"' {
		return nil, false, s.syntax("expected a string")
	}
	s.startCapture(maxNameLen + 2)
	if err := s.skipString(); err != nil {
		s.capturing = false
		s.capBuf = nil
		return nil, false, err
	}
	raw := s.endCapture()
	if raw == nil {
		return nil, false, nil
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		var out string
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, false, s.syntax("invalid string")
		}
		return []byte(out), true, nil
	}
	return inner, true, nil
}

// skipLiteral consumes true, false or null.
func (s *scanner) skipLiteral(word string) error {
	for i := 0; i < len(word); i++ {
		c, err := s.rawByte()
		if err != nil {
			return err
		}
		if c != word[i] {
			return s.syntax("invalid literal")
		}
	}
	return nil
}

// skipNumber consumes a number, checking the JSON number grammar.
func (s *scanner) skipNumber() error {
	peek := func() (byte, bool) {
		if s.pos == s.end && !s.fill() {
			return 0, false
		}
		return s.buf[s.pos], true
	}
	digits := func() (int, error) {
		n := 0
		for {
			c, ok := peek()
			if !ok {
				if s.rerr != nil {
					return n, s.rerr
				}
				return n, nil
			}
			if c < '0' || c > '9' {
				return n, nil
			}
			s.pos++
			n++
		}
	}
	if c, ok := peek(); ok && c == '-' {
		s.pos++
	}
	c, ok := peek()
	if !ok {
		return s.unexpectedEnd()
	}
	switch {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		if _, err := digits(); err != nil {
			return err
		}
	default:
		return s.syntax("invalid number")
	}
	if c, ok := peek(); ok && c == '.' {
		s.pos++
		n, err := digits()
		if err != nil {
			return err
		}
		if n == 0 {
			return s.syntax("invalid number")
		}
	}
	if c, ok := peek(); ok && (c == 'e' || c == 'E') {
		s.pos++
		if c, ok := peek(); ok && (c == '+' || c == '-') {
			s.pos++
		}
		n, err := digits()
		if err != nil {
			return err
		}
		if n == 0 {
			return s.syntax("invalid number")
		}
	}
	if s.rerr != nil {
		return s.rerr
	}
	return nil
}

// skipValue consumes one value of any kind.
func (s *scanner) skipValue(depth int) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		return s.skipString()
	case c == '{':
		if depth >= maxDepth {
			return s.syntax("state JSON nested too deeply")
		}
		s.pos++
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			s.pos++
			return nil
		}
		for {
			if c != '"' {
				return s.syntax("expected a field name")
			}
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			more, err := s.more('}')
			if err != nil || !more {
				return err
			}
			if c, err = s.next(); err != nil {
				return err
			}
		}
	case c == '[':
		if depth >= maxDepth {
			return s.syntax("state JSON nested too deeply")
		}
		s.pos++
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == ']' {
			s.pos++
			return nil
		}
		for {
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			more, err := s.more(']')
			if err != nil || !more {
				return err
			}
		}
	case c == 't':
		return s.skipLiteral("true")
	case c == 'f':
		return s.skipLiteral("false")
	case c == 'n':
		return s.skipLiteral("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.skipNumber()
	default:
		return s.syntax("unexpected character where a value belongs")
	}
}

// more consumes the separator after a member or element: true after a comma,
// false after the closing delimiter.
func (s *scanner) more(closing byte) (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, err
	}
	s.pos++
	switch c {
	case ',':
		return true, nil
	case closing:
		return false, nil
	}
	return false, s.syntax("expected ',' or %q", closing)
}

// captureValueWithin reads the next value and returns its text when it
// takes at most limit bytes; a longer value is skipped without being held
// (fits false). The text is the caller's to keep.
func (s *scanner) captureValueWithin(limit int) (json.RawMessage, bool, error) {
	if _, err := s.next(); err != nil {
		return nil, false, err
	}
	if limit <= 0 {
		return nil, false, nil
	}
	s.startCapture(limit)
	s.capBuf = nil // a buffer of its own, not the reused scratch
	s.capOwn = true
	if err := s.skipValue(1); err != nil {
		s.capturing, s.capOwn = false, false
		s.capBuf = nil
		return nil, false, err
	}
	v := s.endCapture()
	return v, v != nil, nil
}

// isNull consumes a null if one comes next.
func (s *scanner) isNull() (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, err
	}
	if c != 'n' {
		return false, nil
	}
	return true, s.skipLiteral("null")
}

// object walks the members of an object, handing each field name to fn,
// which must consume the value; the name is only valid until then. Field
// names longer than maxNameLen are reported as nil with ok false. A null
// instead of an object walks nothing.
func (s *scanner) object(fn func(name []byte, ok bool) error) error {
	if null, err := s.isNull(); err != nil || null {
		return err
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == '}' {
		s.pos++
		return nil
	}
	for {
		name, ok, err := s.readName()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := fn(name, ok); err != nil {
			return err
		}
		more, err := s.more('}')
		if err != nil || !more {
			return err
		}
	}
}

// array walks the elements of an array, calling fn to consume each. A null
// instead of an array walks nothing.
func (s *scanner) array(fn func() error) error {
	if null, err := s.isNull(); err != nil || null {
		return err
	}
	if err := s.expect('['); err != nil {
		return err
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == ']' {
		s.pos++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		more, err := s.more(']')
		if err != nil || !more {
			return err
		}
	}
}

// atEnd consumes trailing whitespace and fails on anything else, so the
// whole stream (and the gzip checksum behind it) is read.
func (s *scanner) atEnd() error {
	_, err := s.peekNonSpace()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.syntax("unexpected data after the state object")
}
