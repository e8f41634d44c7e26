package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error reports a value that has no canonical form, with the path of the
// offending element ("$" is the whole value, then ".key", `["odd key"]` and
// "[index]" steps). It never carries the element's value.
type Error struct {
	// Path locates the offending element.
	Path string
	// Problem says what is wrong with it.
	Problem string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Path, e.Problem)
}

// ProblemNotInteger is the Problem of an Error for a fractional or exponent
// number.
const ProblemNotInteger = "fractional or exponent number: the inputs hash accepts integers only"

// Parse decodes one JSON text into a value tree made of map[string]any,
// []any, string, json.Number, bool and nil. It rejects invalid UTF-8,
// duplicate object keys and trailing data. Numbers are kept as written, so
// Parse itself accepts fractions; Marshal rejects them.
func Parse(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, &Error{Path: "$", Problem: "not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, "$")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &Error{Path: "$", Problem: "unexpected data after the JSON value"}
	}
	return v, nil
}

func parseValue(dec *json.Decoder, path string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, syntaxError(path, err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &Error{Path: path, Problem: "object key is not a string"}
				}
				child := Child(path, key)
				if _, dup := obj[key]; dup {
					return nil, &Error{Path: child, Problem: "duplicate object key"}
				}
				v, err := parseValue(dec, child)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(path, err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := parseValue(dec, Index(path, i))
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(path, err)
			}
			return arr, nil
		default:
			return nil, &Error{Path: path, Problem: fmt.Sprintf("unexpected %q", rune(t))}
		}
	default:
		// string, json.Number, bool or nil.
		return t, nil
	}
}

func syntaxError(path string, err error) error {
	if errors.Is(err, io.EOF) {
		return &Error{Path: path, Problem: "unexpected end of JSON input"}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Path: path, Problem: fmt.Sprintf("invalid JSON at byte offset %d", se.Offset)}
	}
	return &Error{Path: path, Problem: "invalid JSON"}
}

// Child returns the path of member key of the object at path.
func Child(path, key string) string {
	if isIdent(key) {
		return path + "." + key
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// Index returns the path of element i of the array at path.
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c == '-' || c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return true
}

// Canonicalize parses a JSON text and returns its canonical form.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Marshal(v)
}

// Marshal returns the canonical form of a value tree. Besides what Parse
// produces it accepts the Go integer types, map[string]string, []string,
// map[string]any and json.RawMessage (parsed first). Floating-point Go
// values are refused: numbers must arrive as integers or json.Number.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends the canonical form of v to dst.
func Append(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, "$")
}

func appendValue(dst []byte, v any, path string) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if t {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return appendString(dst, t, path)
	case json.Number:
		return appendNumber(dst, string(t), path)
	case int:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(dst, t, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(t), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(t), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(t), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(t), 10), nil
	case uint64:
		return strconv.AppendUint(dst, t, 10), nil
	case float32, float64:
		return nil, &Error{Path: path, Problem: "floating-point value: numbers must be integers"}
	case json.RawMessage:
		parsed, err := Parse(t)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return nil, &Error{Path: path + strings.TrimPrefix(ce.Path, "$"), Problem: ce.Problem}
			}
			return nil, err
		}
		return appendValue(dst, parsed, path)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			child := Child(path, k)
			var err error
			if dst, err = appendString(dst, k, child); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, t[k], child); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case map[string]string:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			child := Child(path, k)
			var err error
			if dst, err = appendString(dst, k, child); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendString(dst, t[k], child); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, Index(path, i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendString(dst, e, Index(path, i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	default:
		return nil, &Error{Path: path, Problem: fmt.Sprintf("unsupported Go type %T", v)}
	}
}

// IsInteger reports whether a JSON number literal is an integer: an
// optional minus sign and digits without leading zeros, no fraction and no
// exponent.
func IsInteger(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isNumber reports whether lit is a JSON number literal (RFC 8259 §6).
func isNumber(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

func appendNumber(dst []byte, lit, path string) ([]byte, error) {
	if !IsInteger(lit) {
		if !isNumber(lit) {
			return nil, &Error{Path: path, Problem: "not a JSON number"}
		}
		return nil, &Error{Path: path, Problem: ProblemNotInteger}
	}
	if lit == "-0" {
		return append(dst, '0'), nil
	}
	return append(dst, lit...), nil
}

const hexDigits = "0123456789abcdef"

func appendString(dst []byte, s, path string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, &Error{Path: path, Problem: "string is not valid UTF-8"}
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}
