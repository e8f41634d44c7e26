package canonical

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// writeShuffled writes v as JSON with object members in a random order,
// random whitespace and random (but equivalent) string escapes: the same
// value as a different text.
func writeShuffled(buf *bytes.Buffer, v any, r *rand.Rand) {
	ws := func() {
		for range r.IntN(3) {
			buf.WriteByte(" \t\n\r"[r.IntN(4)])
		}
	}
	ws()
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k, r)
			ws()
			buf.WriteByte(':')
			writeShuffled(buf, t[k], r)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeShuffled(buf, e, r)
		}
		buf.WriteByte(']')
	case string:
		writeString(buf, t, r)
	case json.Number:
		buf.WriteString(string(t))
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	}
	ws()
}

func writeString(buf *bytes.Buffer, s string, r *rand.Rand) {
	if r.IntN(2) == 0 {
		b, _ := json.Marshal(s) // HTML-escaping encoder
		buf.Write(b)
		return
	}
	buf.WriteByte('"')
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' || r.IntN(4) == 0 {
			if c > 0xffff {
				b, _ := json.Marshal(string(c))
				buf.Write(b[1 : len(b)-1])
				continue
			}
			buf.WriteString(`\u` + strconv.FormatInt(int64(c)+0x10000, 16)[1:])
			continue
		}
		buf.WriteRune(c)
	}
	buf.WriteByte('"')
}

func FuzzCanonical(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":[1,2,{"c":null}],"d":"x<y & z"}`,
		`[true,false,null,"\u2028",-0,123456789012345678901234567890]`,
		`{"ratio":0.5}`, `{"a":1,"a":2}`, `"\ud83d\ude00"`, `{}`, `[]`, `1e3`, "\"\xff\"",
	} {
		f.Add([]byte(seed), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		want, err := Canonicalize(data) // must never panic
		if err != nil {
			return
		}
		// Idempotent.
		again, err := Canonicalize(want)
		if err != nil || !bytes.Equal(again, want) {
			t.Fatalf("canonical form is not a fixed point: %s -> %s (%v)", want, again, err)
		}
		// Decodes to the same value as the input.
		var a, b any
		da := json.NewDecoder(bytes.NewReader(data))
		da.UseNumber()
		db := json.NewDecoder(bytes.NewReader(want))
		db.UseNumber()
		if da.Decode(&a) != nil || db.Decode(&b) != nil || !equalJSON(a, b) {
			t.Fatalf("canonical form %s does not decode to the value of %q", want, data)
		}
		// Order-, whitespace- and escape-independent.
		v, _ := Parse(data)
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		for range 3 {
			var buf bytes.Buffer
			writeShuffled(&buf, v, r)
			got, err := Canonicalize(buf.Bytes())
			if err != nil {
				t.Fatalf("reordered text %q: %v", buf.Bytes(), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("reordered text %q canonicalises to %s, want %s", buf.Bytes(), got, want)
			}
		}
	})
}

// equalJSON compares decoded values, treating "-0" and "0" as equal.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !equalJSON(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalJSON)
	case json.Number:
		y, ok := b.(json.Number)
		return ok && (x == y || x == "-0" && y == "0")
	}
	return reflect.DeepEqual(a, b)
}
