package cli

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// kind is one of the workload kinds, the kinds CAPTF runs Jobs for.
type kind struct {
	// Kind is the API kind, e.g. TerraformCluster.
	Kind string
	// Resource is the plural resource, e.g. terraformclusters.
	Resource string
	// aliases are the other spellings accepted on the command line.
	aliases []string
}

// kinds are the workload kinds in WorkloadKinds' order.
var kinds = kindsOf(infrav1.WorkloadKinds())

// kindsOf describes workload kinds as kubectl spells them: the plural
// resource is the lower-case kind with an s (terraformclusters), and the
// short alias the kind's capitals in lower case (tc, tm, tmp).
func kindsOf(wks []infrav1.WorkloadKind) []kind {
	out := make([]kind, 0, len(wks))
	for _, wk := range wks {
		lower := strings.ToLower(string(wk))
		var short strings.Builder
		for _, r := range string(wk) {
			if unicode.IsUpper(r) {
				short.WriteRune(unicode.ToLower(r))
			}
		}
		out = append(out, kind{Kind: string(wk), Resource: lower + "s", aliases: []string{lower, short.String()}})
	}
	return out
}

// GVR is the kind's group, version and resource.
func (k kind) GVR() schema.GroupVersionResource {
	return infrav1.GroupVersion.WithResource(k.Resource)
}

// lower is the singular resource name used in KIND/NAME.
func (k kind) lower() string { return strings.ToLower(k.Kind) }

// target is a KIND/NAME argument resolved to a kind.
type target struct {
	kind kind
	name string
}

func (t target) String() string { return t.kind.lower() + "/" + t.name }

// parseTarget resolves KIND/NAME, where KIND is a TerraformCluster,
// TerraformMachine or TerraformMachinePool in any of kubectl's spellings
// (kind, singular, plural, short name, optionally with the group).
func parseTarget(arg string) (target, error) {
	k, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" || k == "" || strings.Contains(name, "/") {
		return target{}, fmt.Errorf("%q is not KIND/NAME: name the object as, for example, terraformcluster/my-cluster", arg)
	}
	if group := "." + infrav1.GroupVersion.Group; strings.HasSuffix(strings.ToLower(k), group) {
		k = k[:len(k)-len(group)]
	}
	for _, kd := range kinds {
		if strings.EqualFold(k, kd.Kind) || strings.EqualFold(k, kd.Resource) {
			return target{kind: kd, name: name}, nil
		}
		for _, a := range kd.aliases {
			if strings.EqualFold(k, a) {
				return target{kind: kd, name: name}, nil
			}
		}
	}
	return target{}, fmt.Errorf("unknown kind %q in %q: use terraformcluster (tc), terraformmachine (tm) or terraformmachinepool (tmp)", k, arg)
}
