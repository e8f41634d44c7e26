package inputs

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// reorder re-encodes a JSON text with its object members in reverse-sorted
// or shuffled order.
func reorder(t *testing.T, data []byte, r *rand.Rand) []byte {
	if len(data) == 0 {
		return data
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	var buf bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			buf.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					buf.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				buf.Write(kb)
				buf.WriteString(" : ")
				write(x[k])
			}
			buf.WriteByte('}')
		case []any:
			buf.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(e)
			}
			buf.WriteByte(']')
		default:
			b, _ := json.Marshal(x)
			buf.Write(b)
		}
	}
	write(v)
	return buf.Bytes()
}

// FuzzRenderHash renders a machine and a pool whose cluster exports and
// inline variables come from the fuzzer: Render never panics, and the hash
// does not depend on member order or on the file encoding.
func FuzzRenderHash(f *testing.F) {
	f.Add([]byte(`{"network_id":"net-1","note":"a<b & c>d","ids":[1,2,3]}`), []byte(`{"size":"large","n":3}`), uint64(7))
	f.Add([]byte(`{"ratio":0.5}`), []byte(`{}`), uint64(1))
	f.Add([]byte(`null`), []byte(`{"captf_x":1}`), uint64(2))
	f.Add([]byte(`[{"b":{"a":null}}]`), []byte(`{"l":[{"z":1,"y":true}]}`), uint64(3))
	f.Fuzz(func(t *testing.T, exports, inline []byte, seed uint64) {
		vars, err := ResolveVariables(contract.RoleMachine, nil, inline)
		if err != nil {
			return
		}
		r := rand.New(rand.NewPCG(seed, ^seed))
		for _, role := range []contract.Role{contract.RoleMachine, contract.RoleMachinePool} {
			mk := func(ex []byte) RoleInputs {
				if role == contract.RoleMachine {
					m := bookMachine()
					m.ClusterOutputs = ex
					return m
				}
				p := bookPool()
				p.ClusterOutputs = ex
				return p
			}
			first, err := Render(Request{Image: bookImage, Inputs: mk(exports), Variables: vars})
			if err != nil {
				return
			}
			if h, err := HashFiles(role, bookImage, first.MainTF, first.TFVars); err != nil || h != first.Hash {
				t.Fatalf("%s: HashFiles = %s, %v; Render = %s", role, h, err, first.Hash)
			}
			if !json.Valid(first.TFVars) || !json.Valid(first.MainTF) {
				t.Fatalf("%s: rendered files are not valid JSON", role)
			}
			shuffledVars, err := ResolveVariables(role, nil, reorder(t, inline, r))
			if err != nil {
				t.Fatalf("reordered inline variables refused: %v", err)
			}
			again, err := Render(Request{Image: bookImage, Inputs: mk(reorder(t, exports, r)), Variables: shuffledVars})
			if err != nil {
				t.Fatalf("%s: reordered inputs refused: %v", role, err)
			}
			if again.Hash != first.Hash {
				t.Fatalf("%s: hash depends on member order: %s vs %s", role, again.Hash, first.Hash)
			}
		}
	})
}
