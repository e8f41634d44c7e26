package terraformmachinetemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// MaxCapacityResources bounds the resources one capacity label may declare.
const MaxCapacityResources = 64

var architectures = []infrav1.Architecture{"amd64", "arm64", "s390x", "ppc64le"}

// Resolution is what an image's labels say about a template's nodes.
type Resolution struct {
	// Reason is CapacityResolvedReason (at least one label, every present
	// label valid), CapacityNotDeclaredReason (neither label) or
	// CapacityLabelInvalidReason.
	Reason string
	// Message explains the reason; it names labels and the image, nothing
	// else.
	Message string
	// Capacity and NodeInfo are what goes to status (nil when not declared
	// or invalid).
	Capacity corev1.ResourceList
	NodeInfo *infrav1.NodeInfo
}

// Resolve reads the capacity labels of image's config labels. Pure.
func Resolve(image string, labels map[string]string) Resolution {
	capRaw, hasCap := labels[contract.LabelCapacity]
	infoRaw, hasInfo := labels[contract.LabelNodeInfo]
	if !hasCap && !hasInfo {
		return Resolution{
			Reason:  infrav1.CapacityNotDeclaredReason,
			Message: fmt.Sprintf("Image %s declares neither %s nor %s", image, contract.LabelCapacity, contract.LabelNodeInfo),
		}
	}
	var res Resolution
	var problems []string
	if hasCap {
		c, err := ParseCapacity(capRaw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", contract.LabelCapacity, err))
		}
		res.Capacity = c
	}
	if hasInfo {
		n, err := ParseNodeInfo(infoRaw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", contract.LabelNodeInfo, err))
		}
		res.NodeInfo = n
	}
	if len(problems) > 0 {
		return Resolution{
			Reason:  infrav1.CapacityLabelInvalidReason,
			Message: fmt.Sprintf("Image %s has an invalid label: %s", image, strings.Join(problems, "; ")),
		}
	}
	res.Reason = infrav1.CapacityResolvedReason
	res.Message = fmt.Sprintf("Resolved from image %s: %s", image, Describe(res.Capacity, res.NodeInfo))
	return res
}

// Describe renders capacity and nodeInfo for a message, resources sorted:
// "capacity cpu=2, memory=4Gi; nodeInfo linux/amd64".
func Describe(c corev1.ResourceList, n *infrav1.NodeInfo) string {
	var parts []string
	if len(c) > 0 {
		names := make([]string, 0, len(c))
		for k := range c {
			names = append(names, string(k))
		}
		slices.Sort(names)
		kv := make([]string, 0, len(names))
		for _, k := range names {
			q := c[corev1.ResourceName(k)]
			kv = append(kv, k+"="+q.String())
		}
		parts = append(parts, "capacity "+strings.Join(kv, ", "))
	} else {
		parts = append(parts, "no capacity")
	}
	if n != nil {
		os, arch := n.OperatingSystem, string(n.Architecture)
		if os == "" {
			os = "-"
		}
		if arch == "" {
			arch = "-"
		}
		parts = append(parts, "nodeInfo "+os+"/"+arch)
	} else {
		parts = append(parts, "no nodeInfo")
	}
	return strings.Join(parts, "; ")
}

// ParseCapacity parses io.captf.capacity: a JSON object of resource names
// (qualified names such as cpu, memory or nvidia.com/gpu) to non-negative
// quantities, given as strings ("4Gi") or JSON numbers (2).
func ParseCapacity(raw string) (corev1.ResourceList, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object of resource quantities: %w", err)
	}
	if err := onlyOneValue(dec); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object of resource quantities: null")
	}
	if len(m) == 0 {
		return nil, errors.New("declares no resource")
	}
	if len(m) > MaxCapacityResources {
		return nil, fmt.Errorf("declares %d resources, more than %d", len(m), MaxCapacityResources)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	out := corev1.ResourceList{}
	for _, k := range names {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return nil, fmt.Errorf("resource name %q is invalid: %s", k, msgs[0])
		}
		text, err := quantityText(m[k])
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", k, err)
		}
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return nil, fmt.Errorf("resource %q: quantity %q does not parse", k, text)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource %q: quantity %q is negative", k, text)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

func quantityText(v json.RawMessage) (string, error) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) > 0 && v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("quantity is not a valid JSON string")
		}
		return s, nil
	case len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')):
		return string(v), nil
	default:
		return "", fmt.Errorf("quantity must be a string or a number, got %s", shorten(string(v), 32))
	}
}

// ParseNodeInfo parses io.captf.node-info: a JSON object with
// architecture (amd64, arm64, s390x or ppc64le) and/or operatingSystem (1
// to 64 characters), and no other key.
func ParseNodeInfo(raw string) (*infrav1.NodeInfo, error) {
	var v struct {
		Architecture    *string `json:"architecture"`
		OperatingSystem *string `json:"operatingSystem"`
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a JSON object with architecture and operatingSystem: %w", err)
	}
	if err := onlyOneValue(dec); err != nil {
		return nil, err
	}
	if v.Architecture == nil && v.OperatingSystem == nil {
		return nil, errors.New("sets neither architecture nor operatingSystem")
	}
	n := &infrav1.NodeInfo{}
	if v.Architecture != nil {
		a := infrav1.Architecture(*v.Architecture)
		if !slices.Contains(architectures, a) {
			return nil, fmt.Errorf("architecture %q is not one of amd64, arm64, s390x, ppc64le", shorten(*v.Architecture, 32))
		}
		n.Architecture = a
	}
	if v.OperatingSystem != nil {
		if l := len(*v.OperatingSystem); l < 1 || l > 64 {
			return nil, fmt.Errorf("operatingSystem must be 1 to 64 characters, got %d", l)
		}
		n.OperatingSystem = *v.OperatingSystem
	}
	return n, nil
}

func onlyOneValue(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("has data after the JSON object")
	}
	return nil
}
