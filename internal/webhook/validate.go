package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	captfjobs "github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// Limits the API reference gives (reference-facts §11).
const (
	maxImageLength      = 512
	maxProviderIDLength = 512
	maxEndpointHost     = 512
	maxAllowedList      = 100
)

// validateImage checks that image is a syntactically valid OCI image
// reference, by tag or digest. The registry and repository are not policed
// (Security Model: an admission policy by registry prefix is the control
// for that).
func validateImage(path *field.Path, image string) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(path, "an image reference, by tag or digest")}
	}
	if len(image) > maxImageLength {
		return field.ErrorList{field.TooLong(path, "", maxImageLength)}
	}
	if _, err := name.ParseReference(image); err != nil {
		return field.ErrorList{field.Invalid(path, image, "not a valid image reference: "+err.Error())}
	}
	return nil
}

// validateIdentityRef checks the name of a TerraformClusterIdentity
// reference: a cluster-scoped object name, so a DNS subdomain.
func validateIdentityRef(path *field.Path, ref *infrav1.IdentityReference) field.ErrorList {
	if ref == nil {
		return nil
	}
	return dnsSubdomain(path.Child("name"), ref.Name)
}

func dnsSubdomain(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

func dnsLabel(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

// validateVariables applies the Module Variables rules to spec.variables
// (names only: a value is never echoed) and spec.variablesFrom (exactly one
// of configMapRef and secretRef, a DNS subdomain name, at most 16 sources).
func validateVariables(path *field.Path, role contract.Role, ws *infrav1.WorkspaceSpec) field.ErrorList {
	var errs field.ErrorList
	vars := path.Child("variables")
	if ws.Variables != nil && len(ws.Variables) == 0 {
		errs = append(errs, field.Required(vars, "when set, at least one variable"))
	}
	if len(ws.Variables) > contract.MaxInlineVariables {
		errs = append(errs, field.TooMany(vars, len(ws.Variables), contract.MaxInlineVariables))
	}
	names := make([]string, 0, len(ws.Variables))
	for k := range ws.Variables {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		var ne *contract.NameError
		if err := contract.CheckVariableName(role, k); errors.As(err, &ne) {
			errs = append(errs, field.Invalid(vars.Key(k), k, "variable name "+ne.Problem))
		}
	}
	from := path.Child("variablesFrom")
	if ws.VariablesFrom != nil && len(ws.VariablesFrom) == 0 {
		errs = append(errs, field.Required(from, "when set, at least one source"))
	}
	if len(ws.VariablesFrom) > contract.MaxVariableSources {
		errs = append(errs, field.TooMany(from, len(ws.VariablesFrom), contract.MaxVariableSources))
	}
	for i, s := range ws.VariablesFrom {
		p := from.Index(i)
		switch {
		case s.ConfigMapRef != nil && s.SecretRef != nil:
			errs = append(errs, field.Forbidden(p, "names both a configMapRef and a secretRef: set exactly one"))
		case s.ConfigMapRef == nil && s.SecretRef == nil:
			errs = append(errs, field.Required(p, "exactly one of configMapRef or secretRef"))
		case s.ConfigMapRef != nil:
			errs = append(errs, dnsSubdomain(p.Child("configMapRef", "name"), s.ConfigMapRef.Name)...)
		default:
			errs = append(errs, dnsSubdomain(p.Child("secretRef", "name"), s.SecretRef.Name)...)
		}
		if s.Format != "" && s.Format != infrav1.VariablesFormatString && s.Format != infrav1.VariablesFormatJSON {
			errs = append(errs, field.NotSupported(p.Child("format"), s.Format, []infrav1.VariablesFormat{infrav1.VariablesFormatString, infrav1.VariablesFormatJSON}))
		}
	}
	return errs
}

// validateJobPolicy applies the Tuning Jobs and Security Model rules to one
// jobs policy: lockTimeoutSeconds below activeDeadlineSeconds, a DNS
// subdomain serviceAccountName, valid pull secret and env names, a pod
// the Job build would create (validatePodSecurity), and a placement
// (podMetadata, nodeSelector, tolerations, affinity,
// topologySpreadConstraints, priorityClassName) Kubernetes accepts on a
// pod, with no pod label or annotation key of CAPTF's or the Job
// controller's (captfjobs.Placement.Validate).
func validateJobPolicy(path *field.Path, p *infrav1.JobPolicy) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	if p.LockTimeoutSeconds != nil && p.ActiveDeadlineSeconds != nil && int64(*p.LockTimeoutSeconds) >= *p.ActiveDeadlineSeconds {
		errs = append(errs, field.Invalid(path.Child("lockTimeoutSeconds"), *p.LockTimeoutSeconds,
			fmt.Sprintf("must be less than activeDeadlineSeconds (%d): a lock wait alone could fill the whole deadline", *p.ActiveDeadlineSeconds)))
	}
	if p.ActiveDeadlineSeconds != nil && (*p.ActiveDeadlineSeconds < 1 || *p.ActiveDeadlineSeconds > 86400) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *p.ActiveDeadlineSeconds, "must be between 1 and 86400 (one day)"))
	}
	if p.ServiceAccountName != "" {
		errs = append(errs, dnsSubdomain(path.Child("serviceAccountName"), p.ServiceAccountName)...)
	}
	for i, s := range p.ImagePullSecrets {
		errs = append(errs, dnsSubdomain(path.Child("imagePullSecrets").Index(i).Child("name"), s.Name)...)
	}
	for i, e := range p.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(path.Child("env").Index(i).Child("name"), e.Name, msg))
		}
	}
	errs = append(errs, validatePodSecurity(path, p)...)
	// Placement: the same check the effective policy's Validate makes, so
	// a reserved pod label or annotation key is refused here at its field
	// and, on a policy stored before this refused it, at the Job build.
	pl := captfjobs.PolicyPlacement(p)
	errs = append(errs, pl.Validate(path)...)
	return errs
}

// validatePodSecurity refuses a jobs policy whose pod would fail what the
// Job build checks (captfjobs.PolicyPodSecurity: the Pod Security Standards
// restricted profile less runAsNonRoot, and no sysctl), at each field of
// the policy at fault, and any capabilities.add on the container that
// holds the identity's cloud credentials (Security Model, Pod security).
func validatePodSecurity(path *field.Path, p *infrav1.JobPolicy) field.ErrorList {
	var errs field.ErrorList
	if sc := p.SecurityContext; sc != nil && sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		errs = append(errs, field.Forbidden(path.Child("securityContext", "capabilities", "add"), "adding capabilities is not allowed: the container holds the identity's cloud credentials"))
	}
	for _, pr := range captfjobs.PolicyPodSecurity(p) {
		if len(pr.Fields) == 0 {
			errs = append(errs, field.Forbidden(path, pr.String()))
			continue
		}
		for _, f := range pr.Fields {
			keys := strings.Split(f, ".")
			errs = append(errs, field.Forbidden(path.Child(keys[0], keys[1:]...), pr.String()))
		}
	}
	return errs
}

// validateWorkspace applies the rules every TerraformCluster,
// TerraformMachine and TerraformMachinePool spec (and template spec)
// shares.
func validateWorkspace(path *field.Path, role contract.Role, ws *infrav1.WorkspaceSpec) field.ErrorList {
	errs := validateImage(path.Child("source", "image"), ws.Source.Image)
	errs = append(errs, validateVariables(path, role, ws)...)
	errs = append(errs, validateJobPolicy(path.Child("jobs"), ws.Jobs)...)
	return errs
}

// ValidateClusterSpec checks a TerraformCluster spec, or a
// TerraformClusterTemplate's spec.template.spec (template true: identityRef
// may be left to a ClusterClass patch).
func ValidateClusterSpec(path *field.Path, s *infrav1.TerraformClusterSpec, template bool) field.ErrorList {
	errs := validateWorkspace(path, contract.RoleCluster, &s.WorkspaceSpec)
	if s.IdentityRef == nil && !template {
		errs = append(errs, field.Required(path.Child("identityRef"), "every TerraformCluster names its TerraformClusterIdentity"))
	}
	errs = append(errs, validateIdentityRef(path.Child("identityRef"), s.IdentityRef)...)
	ep := s.ControlPlaneEndpoint
	epPath := path.Child("controlPlaneEndpoint")
	switch {
	case ep.Host != "" && ep.Port == 0:
		errs = append(errs, field.Required(epPath.Child("port"), "host and port must be set together"))
	case ep.Host == "" && ep.Port != 0:
		errs = append(errs, field.Required(epPath.Child("host"), "host and port must be set together"))
	}
	if len(ep.Host) > maxEndpointHost {
		errs = append(errs, field.TooLong(epPath.Child("host"), "", maxEndpointHost))
	}
	if ep.Port < 0 || ep.Port > 65535 {
		errs = append(errs, field.Invalid(epPath.Child("port"), ep.Port, "must be between 1 and 65535"))
	}
	if d := s.Defaults; d != nil {
		dp := path.Child("defaults")
		errs = append(errs, validateIdentityRef(dp.Child("identityRef"), d.IdentityRef)...)
		errs = append(errs, validateJobPolicy(dp.Child("jobs"), d.Jobs)...)
	}
	return errs
}

// ValidateClusterUpdate checks what a TerraformCluster update may not
// change: spec.controlPlaneEndpoint once it has a host (set by the user, or
// once by the controller from the module's output).
func ValidateClusterUpdate(old, cur *infrav1.TerraformCluster) field.ErrorList {
	o, n := old.Spec.ControlPlaneEndpoint, cur.Spec.ControlPlaneEndpoint
	if o.Host != "" && o != n {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "controlPlaneEndpoint"), "immutable once it has a host: every Machine and kubeconfig of the cluster points at it")}
	}
	return nil
}

// ValidateMachineSpec checks a TerraformMachine spec or a
// TerraformMachineTemplate's spec.template.spec.
func ValidateMachineSpec(path *field.Path, s *infrav1.TerraformMachineSpec) field.ErrorList {
	errs := validateWorkspace(path, contract.RoleMachine, &s.WorkspaceSpec)
	errs = append(errs, validateIdentityRef(path.Child("identityRef"), s.IdentityRef)...)
	if len(s.ProviderID) > maxProviderIDLength {
		errs = append(errs, field.TooLong(path.Child("providerID"), "", maxProviderIDLength))
	}
	return errs
}

// ValidateMachineUpdate checks what a TerraformMachine update may not
// change: source, identityRef (from unset too), variables and variablesFrom
// define the machine (a change comes through a rollout), and providerID
// moves only from empty to a value. jobs, drift and remediation stay
// mutable.
func ValidateMachineUpdate(old, cur *infrav1.TerraformMachine) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	immutable := func(p *field.Path) *field.Error {
		return field.Forbidden(p, "immutable once the TerraformMachine exists: roll the MachineDeployment or control plane onto a new template instead")
	}
	if old.Spec.Source != cur.Spec.Source {
		errs = append(errs, immutable(spec.Child("source")))
	}
	if !reflect.DeepEqual(old.Spec.IdentityRef, cur.Spec.IdentityRef) {
		errs = append(errs, immutable(spec.Child("identityRef")))
	}
	if !sameJSONMap(old.Spec.Variables, cur.Spec.Variables) {
		errs = append(errs, immutable(spec.Child("variables")))
	}
	if !reflect.DeepEqual(old.Spec.VariablesFrom, cur.Spec.VariablesFrom) {
		errs = append(errs, immutable(spec.Child("variablesFrom")))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != cur.Spec.ProviderID {
		errs = append(errs, field.Forbidden(spec.Child("providerID"), "set once, by the controller: it cannot change or be cleared"))
	}
	return errs
}

// sameJSONMap compares two variables maps by value, whatever the JSON
// formatting of each value.
func sameJSONMap(a, b map[string]apiextensionsv1.JSON) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !sameJSON(va.Raw, vb.Raw) {
			return false
		}
	}
	return true
}

func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// ValidateMachinePoolSpec checks a TerraformMachinePool spec or a
// TerraformMachinePoolTemplate's spec.template.spec.
func ValidateMachinePoolSpec(path *field.Path, s *infrav1.TerraformMachinePoolSpec) field.ErrorList {
	errs := validateWorkspace(path, contract.RoleMachinePool, &s.WorkspaceSpec)
	errs = append(errs, validateIdentityRef(path.Child("identityRef"), s.IdentityRef)...)
	if len(s.ProviderID) > maxProviderIDLength {
		errs = append(errs, field.TooLong(path.Child("providerID"), "", maxProviderIDLength))
	}
	if m := s.MembershipRefreshIntervalSeconds; m != nil && *m != 0 && (*m < 15 || *m > 86400) {
		errs = append(errs, field.Invalid(path.Child("membershipRefreshIntervalSeconds"), *m, "must be 0 or between 15 and 86400"))
	}
	return errs
}

// ValidateIdentitySpec checks a TerraformClusterIdentity: its secretRef
// names a Secret (DNS subdomain) in a namespace (DNS label), and
// allowedNamespaces, when set, sets list or selector (an empty one reads as
// "every namespace" to some and "none" to others, so it is refused).
func ValidateIdentitySpec(s *infrav1.TerraformClusterIdentitySpec) field.ErrorList {
	spec := field.NewPath("spec")
	ref := spec.Child("secretRef")
	errs := dnsSubdomain(ref.Child("name"), s.SecretRef.Name)
	errs = append(errs, dnsLabel(ref.Child("namespace"), s.SecretRef.Namespace)...)
	a := s.AllowedNamespaces
	if a == nil {
		return errs
	}
	ap := spec.Child("allowedNamespaces")
	if a.List == nil && a.Selector == nil {
		errs = append(errs, field.Required(ap, "list or selector: {} is refused rather than read as every namespace or none"))
	}
	if a.List != nil && len(a.List) == 0 {
		errs = append(errs, field.Required(ap.Child("list"), "when set, at least one namespace"))
	}
	if len(a.List) > maxAllowedList {
		errs = append(errs, field.TooMany(ap.Child("list"), len(a.List), maxAllowedList))
	}
	seen := map[string]bool{}
	for i, ns := range a.List {
		p := ap.Child("list").Index(i)
		errs = append(errs, dnsLabel(p, ns)...)
		if seen[ns] {
			errs = append(errs, field.Duplicate(p, ns))
		}
		seen[ns] = true
	}
	if a.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.Selector, metav1validation.LabelSelectorValidationOptions{}, ap.Child("selector"))...)
	}
	return errs
}

// ratchet drops from errs the problems old already had (same field, same
// kind of problem, same value): an update is refused only for what it makes worse, so
// an object stored before a rule existed can still have its finalizer
// removed, its status-like spec fields set by the controller, or its
// mutable fields fixed one at a time.
func ratchet(old, errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 || len(old) == 0 {
		return errs
	}
	key := func(e *field.Error) string { return fmt.Sprintf("%s %s %v", e.Type, e.Field, e.BadValue) }
	had := make(map[string]bool, len(old))
	for _, e := range old {
		had[key(e)] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[key(e)] {
			out = append(out, e)
		}
	}
	return out
}

// templateSpecChanged reports whether a template's spec.template.spec
// changed// (metadata stays mutable), comparing JSON values by value.
func templateSpecChanged(old, cur any) bool {
	a, errA := json.Marshal(old)
	b, errB := json.Marshal(cur)
	if errA != nil || errB != nil {
		return !reflect.DeepEqual(old, cur)
	}
	return !sameJSON(a, b)
}
