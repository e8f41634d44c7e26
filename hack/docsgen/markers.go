package main

import (
	"fmt"
	"strconv"
	"strings"
)

// marker is one "+name=value" or "+name:arg=value,..." line of a doc comment.
type marker struct {
	// Name is the marker's name without the leading "+", for example
	// "kubebuilder:validation:MaxLength" or "kubebuilder:printcolumn".
	Name string
	// Value is what follows the first "=" of a plain marker ("" when none).
	Value string
	// Args holds the named arguments of an argument-style marker
	// (printcolumn, resource, XValidation), in source order.
	Args []markerArg
	// Raw is the marker line as written, without the leading "+".
	Raw string
}

type markerArg struct {
	Key   string
	Value string
}

// Arg returns the value of the named argument, and whether it was given.
func (m marker) Arg(key string) (string, bool) {
	for _, a := range m.Args {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// argMarkers are the markers whose text after "name:" is a list of
// key=value arguments rather than a single value.
var argMarkers = []string{
	"kubebuilder:printcolumn",
	"kubebuilder:resource",
	"kubebuilder:validation:XValidation",
}

// parseMarker parses one comment line that starts with "+".
func parseMarker(line string) (marker, error) {
	raw := strings.TrimPrefix(strings.TrimSpace(line), "+")
	for _, name := range argMarkers {
		if rest, ok := strings.CutPrefix(raw, name+":"); ok {
			args, err := parseArgs(rest)
			if err != nil {
				return marker{}, fmt.Errorf("marker +%s: %w", name, err)
			}
			return marker{Name: name, Args: args, Raw: raw}, nil
		}
	}
	name, value, _ := strings.Cut(raw, "=")
	if name == "" {
		return marker{}, fmt.Errorf("marker %q has no name", line)
	}
	switch {
	case len(value) >= 2 && value[0] == '`' && value[len(value)-1] == '`':
		value = value[1 : len(value)-1]
	case len(value) >= 1 && value[0] == '"':
		v, err := strconv.Unquote(value)
		if err != nil {
			return marker{}, fmt.Errorf("marker +%s: bad quoted value %s: %w", name, value, err)
		}
		value = v
	}
	return marker{Name: name, Value: value, Raw: raw}, nil
}

// parseArgs parses `key=value,key2="quoted, value",key3={a;b}`. A value is
// a Go double-quoted string, a back-quoted raw string, a brace list, or bare
// text up to the next comma.
func parseArgs(s string) ([]markerArg, error) {
	var args []markerArg
	for i := 0; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, fmt.Errorf("argument %q at offset %d has no value", s[i:], i)
		}
		key := s[i : i+eq]
		if key == "" || strings.ContainsAny(key, ",\"`{}") {
			return nil, fmt.Errorf("bad argument name %q at offset %d", key, i)
		}
		i += eq + 1
		var value string
		switch {
		case i < len(s) && s[i] == '"':
			end, err := quotedEnd(s, i)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", key, err)
			}
			v, err := strconv.Unquote(s[i:end])
			if err != nil {
				return nil, fmt.Errorf("argument %s: bad quoted value %s: %w", key, s[i:end], err)
			}
			value, i = v, end
		case i < len(s) && s[i] == '`':
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				return nil, fmt.Errorf("argument %s: unterminated raw string", key)
			}
			value, i = s[i+1:i+1+end], i+end+2
		case i < len(s) && s[i] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("argument %s: unterminated list", key)
			}
			value, i = s[i+1:i+end], i+end+1
		default:
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			value, i = s[i:i+end], i+end
		}
		args = append(args, markerArg{Key: key, Value: value})
		if i < len(s) {
			if s[i] != ',' {
				return nil, fmt.Errorf("expected ',' after argument %s at offset %d", key, i)
			}
			i++
			if i == len(s) {
				return nil, fmt.Errorf("trailing ',' after argument %s", key)
			}
		}
	}
	return args, nil
}

// quotedEnd returns the index just past the closing quote of the Go string
// literal starting at s[start].
func quotedEnd(s string, start int) (int, error) {
	for i := start + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated quoted value %s", s[start:])
}

// splitComment separates a comment's prose from its marker lines. Lines are
// the comment's text lines (comment syntax removed).
func splitComment(lines []string) (prose string, markers []marker, err error) {
	var words []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "+") {
			m, err := parseMarker(t)
			if err != nil {
				return "", nil, err
			}
			markers = append(markers, m)
			continue
		}
		if t != "" {
			words = append(words, t)
		}
	}
	return strings.Join(words, " "), markers, nil
}

// listValues splits an Enum-style value ("a;b;c").
func listValues(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ";")
}
