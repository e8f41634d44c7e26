package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// NodeArchitectures are the architectures io.captf.node-info accepts.
func NodeArchitectures() []string { return []string{"amd64", "arm64", "s390x", "ppc64le"} }

// capacityLabels are one platform's capacity labels, as set.
type capacityLabels struct {
	platform string
	set      bool
	capacity string
	nodeInfo string
}

// capacity checks io.captf.capacity and io.captf.node-info. They only
// matter to the machine role (scale from zero).
func (c *imageChecks) capacity() capacityLabels {
	capLabel, hasCap := c.cfg.Labels[contract.LabelCapacity]
	ni, hasNI := c.cfg.Labels[contract.LabelNodeInfo]
	out := capacityLabels{platform: c.os + "/" + c.arch, set: hasCap || hasNI, capacity: capLabel, nodeInfo: ni}
	if c.role != contract.RoleMachine {
		if out.set {
			c.add(CheckImageLabelCapacity, SeverityInfo,
				"the capacity labels are ignored for the %s role; only machine images use them", c.role)
		}
		return out
	}
	if !out.set {
		c.add(CheckImageLabelCapacity, SeverityInfo,
			"no %s or %s label: TerraformMachineTemplate cannot support scale from zero with this image", contract.LabelCapacity, contract.LabelNodeInfo)
		return out
	}
	if hasCap {
		if err := checkCapacity(capLabel); err != nil {
			c.add(CheckImageLabelCapacity, SeverityError, "the %s label is invalid: %v", contract.LabelCapacity, err)
		}
	}
	if hasNI {
		if err := checkNodeInfo(ni); err != nil {
			c.add(CheckImageLabelCapacity, SeverityError, "the %s label is invalid: %v", contract.LabelNodeInfo, err)
		}
	}
	return out
}

// checkCapacity accepts a JSON object of resource name to quantity.
func checkCapacity(s string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return fmt.Errorf("want a JSON object of resource name to quantity, for example {\"cpu\": \"4\", \"memory\": \"16Gi\"}")
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if k == "" {
			return fmt.Errorf("a resource name is empty")
		}
		var q string
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(m[k]))
		d.UseNumber()
		if json.Unmarshal(m[k], &q) != nil {
			if d.Decode(&n) != nil {
				return fmt.Errorf("the quantity of %q is neither a string nor a number", k)
			}
			q = n.String()
		}
		if _, err := k8sresource.ParseQuantity(q); err != nil {
			return fmt.Errorf("the quantity of %q is not a Kubernetes quantity", k)
		}
	}
	return nil
}

// checkNodeInfo accepts {"architecture": ..., "operatingSystem": ...}
// with at least one key.
func checkNodeInfo(s string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return fmt.Errorf("want a JSON object such as {\"architecture\": \"amd64\", \"operatingSystem\": \"linux\"}")
	}
	if len(m) == 0 {
		return fmt.Errorf("set architecture, operatingSystem or both")
	}
	for k, v := range m {
		sv, ok := v.(string)
		switch k {
		case "architecture":
			if !ok || !slices.Contains(NodeArchitectures(), sv) {
				return fmt.Errorf("architecture must be one of %v", NodeArchitectures())
			}
		case "operatingSystem":
			if !ok || sv == "" {
				return fmt.Errorf("operatingSystem must be a non-empty string")
			}
		default:
			return fmt.Errorf("unknown key %q: only architecture and operatingSystem", k)
		}
	}
	return nil
}

// compareCapacities warns when the platforms of an index carry different
// capacity labels.
func compareCapacities(all []capacityLabels, fs *findings) {
	for _, l := range all[min(1, len(all)):] {
		if l.capacity != all[0].capacity || l.nodeInfo != all[0].nodeInfo {
			fs.add(CheckImageLabelCapacity, SeverityWarning, "", 0,
				"the capacity labels differ between %s and %s: set them identically on every platform", all[0].platform, l.platform)
		}
	}
}
