package inputs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// HashScheme names the inputs hash scheme; every hash starts "h2:".
const HashScheme = "h2"

// Members of the hashed document.
const (
	hashKeyScheme    = "scheme"
	hashKeyContract  = "contract"
	hashKeyRole      = "role"
	hashKeyImage     = "image"
	hashKeyInputs    = "inputs"
	hashKeyVariables = "variables"
	hashKeySensitive = "sensitive"
)

// computeHash hashes exactly the set Job Inputs §7 names: the scheme, the
// contract version, the role, the image as written, the rendered contract
// inputs (less the excluded ones) and, only when any are set, the merged
// user variables with the sorted names of the sensitive ones. Nothing else —
// metadata, UIDs, the resolved digest, the pull policy — can reach it.
func computeHash(role contract.Role, image string, fields []field, excluded []string, vars Variables) (string, error) {
	inputs := make(map[string]any, len(fields))
	hint := 4096
	for _, f := range fields {
		if slices.Contains(excluded, f.k) {
			continue
		}
		inputs[f.k] = tree(f.v)
		if s, ok := f.v.(string); ok {
			hint += len(s)
		}
	}
	doc := map[string]any{
		hashKeyScheme:   HashScheme,
		hashKeyContract: contract.Version,
		hashKeyRole:     string(role),
		hashKeyImage:    image,
		hashKeyInputs:   inputs,
	}
	if vars.Len() > 0 {
		doc[hashKeyVariables] = vars.Values
		doc[hashKeySensitive] = vars.SensitiveNames()
	}
	return hashDocument(doc, hint)
}

// hashBuffers recycles the canonical text of hashed documents, which is as
// large as the bootstrap data it carries.
var hashBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledHashBuffer keeps a rare huge render from pinning its buffer.
const maxPooledHashBuffer = 2 << 20

func hashDocument(doc map[string]any, sizeHint int) (string, error) {
	bp := hashBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledHashBuffer {
			hashBuffers.Put(bp)
		}
	}()
	if cap(*bp) < sizeHint {
		*bp = make([]byte, 0, sizeHint)
	}
	b, err := canonical.Append((*bp)[:0], doc)
	*bp = b[:0]
	if err != nil {
		var ce *canonical.Error
		if errors.As(err, &ce) {
			return "", unhashable(ce)
		}
		return "", err
	}
	sum := sha256.Sum256(b)
	return HashScheme + ":" + hex.EncodeToString(sum[:]), nil
}

// unhashable turns a canonical error on the hashed document into an
// *UnhashableError naming the input or variable that holds the value.
func unhashable(ce *canonical.Error) error {
	rest := strings.TrimPrefix(ce.Path, "$")
	input := ""
	for _, prefix := range []string{"." + hashKeyInputs, "." + hashKeyVariables} {
		if after, ok := strings.CutPrefix(rest, prefix); ok {
			input = topKey(after)
		}
	}
	return &UnhashableError{Input: input, Path: ce.Path, Problem: ce.Problem}
}

// topKey returns the first member name of a canonical path suffix such as
// `.captf_cluster_outputs.ratio` or `["odd key"][2]`.
func topKey(p string) string {
	switch {
	case strings.HasPrefix(p, "."):
		p = p[1:]
		if i := strings.IndexAny(p, ".["); i >= 0 {
			return p[:i]
		}
		return p
	case strings.HasPrefix(p, `["`):
		dec := json.NewDecoder(strings.NewReader(p[1:]))
		var s string
		if err := dec.Decode(&s); err == nil {
			return s
		}
	}
	return ""
}

// HashFiles recomputes the inputs hash of a rendered root from its two
// files (for example a durable inputs Secret) and the image as written. It
// equals the Hash that Render returned for them: the contract inputs are
// the role's keys of terraform.tfvars.json, every other key is a user
// variable, sensitive when main.tf.json declares it so, and replicas is left
// out when the autoscaling input is enabled.
func HashFiles(role contract.Role, image string, mainTF, tfvars []byte) (string, error) {
	if _, err := contract.ParseRole(string(role)); err != nil {
		return "", err
	}
	v, err := canonical.Parse(tfvars)
	if err != nil {
		return "", fmt.Errorf("%s: %w", contract.TFVarsFile, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s is not a JSON object", contract.TFVarsFile)
	}
	mv, err := canonical.Parse(mainTF)
	if err != nil {
		return "", fmt.Errorf("%s: %w", contract.MainFile, err)
	}
	mainDoc, _ := mv.(map[string]any)
	declared, _ := mainDoc["variable"].(map[string]any)

	var fields []field
	vars := Variables{Values: map[string]any{}, Sensitive: map[string]bool{}}
	for k, val := range doc {
		if role.IsInput(k) {
			fields = append(fields, field{k, val})
			continue
		}
		vars.Values[k] = val
		if decl, ok := declared[k].(map[string]any); ok && decl["sensitive"] == true {
			vars.Sensitive[k] = true
		}
	}
	var excluded []string
	if a, ok := doc[contract.InputAutoscaling].(map[string]any); ok && role == contract.RoleMachinePool && a["enabled"] == true {
		excluded = []string{contract.InputReplicas}
	}
	return computeHash(role, image, fields, excluded, vars)
}
