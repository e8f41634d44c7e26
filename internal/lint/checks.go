package lint

import (
	"slices"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// Check IDs of module lint (reference: tfcapi-lint CLI, "Module checks").
const (
	CheckInputDefault                 = "input/default"
	CheckInputRequired                = "input/required"
	CheckInputReserved                = "input/reserved"
	CheckInputSensitive               = "input/sensitive"
	CheckInputTagsDeclared            = "input/tags-declared"
	CheckInputTagsUnused              = "input/tags-unused"
	CheckInputType                    = "input/type"
	CheckInputUserVariableDefault     = "input/user-variable-default"
	CheckInputUserVariableNullDefault = "input/user-variable-null-default"
	CheckModuleBackend                = "module/backend"
	CheckModuleCloud                  = "module/cloud"
	CheckModuleProviderConfig         = "module/provider-config"
	CheckModuleTofuShadow             = "module/tofu-shadow"
	CheckModuleVersion                = "module/version"
	CheckOutputEndpointNeverSet       = "output/endpoint-never-set"
	CheckOutputHealth                 = "output/health"
	CheckOutputProviderIDListShape    = "output/provider-id-list-shape"
	CheckOutputRequired               = "output/required"
	CheckOutputReserved               = "output/reserved"
	CheckPoolAutoscalingIgnoreChanges = "pool/autoscaling-ignore-changes"
)

// Check IDs of image lint (reference: tfcapi-lint CLI, "Image checks").
const (
	CheckImageModulePresent     = "image/module-present"
	CheckImageRuntimePresent    = "image/runtime-present"
	CheckImageRuntimeVersion    = "image/runtime-version"
	CheckImageProvidersAbsent   = "image/providers-absent"
	CheckImageProvidersLayout   = "image/providers-layout"
	CheckImageProvidersComplete = "image/providers-complete"
	CheckImageReservedPaths     = "image/reserved-paths"
	CheckImageLabelRole         = "image/label-role"
	CheckImageLabelContract     = "image/label-contract"
	CheckImageLabelCapacity     = "image/label-capacity"
	CheckImageUserRoot          = "image/user-root"
	CheckImageUserUnresolved    = "image/user-unresolved"
	CheckImageModuleReadable    = "image/module-readable"
	CheckImageModuleLink        = "image/module-link"
	CheckImageEntrypoint        = "image/entrypoint"
	CheckImagePlatform          = "image/platform"
)

// Check describes one check: what the reference page lists for it and what
// SARIF reports as its rule.
type Check struct {
	// ID is the check ID.
	ID string
	// Image is true for the image checks.
	Image bool
	// Severities lists every severity the check reports at, most serious
	// first.
	Severities []Severity
	// SeverityNote says when each severity applies, for a check with more
	// than one; empty otherwise.
	SeverityNote string
	// Roles lists the roles the check applies to.
	Roles []contract.Role
	// Summary is one sentence saying what the check finds.
	Summary string
	// Help says how to fix it.
	Help string
}

var allRoles = contract.Roles()

func one(s Severity) []Severity { return []Severity{s} }

var checks = []Check{
	{ID: CheckInputDefault, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "A contract input the controller always sets to a non-null value is declared with a default.",
		Help:    "Remove the default: the controller always sets the input, and a default hides a module that would otherwise fail on a missing value."},
	{ID: CheckInputRequired, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A contract input of the role is not declared (captf_tags has its own check, input/tags-declared).",
		Help:    "Declare every contract input of the role, with the type the contract gives it, even when the module ignores it: the generated root passes each one by name."},
	{ID: CheckInputReserved, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A variable starts with captf_ but is not a contract input of the role.",
		Help:    "Rename the variable: the captf_ prefix is reserved for contract inputs. A cluster module may declare captf_cluster_outputs only with a default (default = null)."},
	{ID: CheckInputSensitive, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "bootstrap_data is declared without sensitive = true.",
		Help:    "Add sensitive = true to the bootstrap_data variable so its value is never shown in plan output."},
	{ID: CheckInputTagsDeclared, Severities: one(SeverityError), Roles: allRoles,
		Summary: "captf_tags is not declared.",
		Help:    "Declare variable \"captf_tags\" { type = map(string) } and apply it to every cloud resource the module creates."},
	{ID: CheckInputTagsUnused, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "captf_tags is never referenced, neither directly nor through a nested local module.",
		Help:    "Apply var.captf_tags to every cloud resource that supports tags or labels; a module whose provider cannot tag anything may allow the warning with --allow-warning input/tags-unused."},
	{ID: CheckInputType, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A contract input's type does not accept the value the controller generates, is missing, or cannot be read.",
		Help:    "Give the variable the type the contract lists for it (or one every value of that type converts to, such as any), and keep a nullable input nullable."},
	{ID: CheckInputUserVariableDefault, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "A variable that is not a contract input has no default.",
		Help:    "Give the user variable a default so the module plans when no object sets it, or allow the warning when every object is meant to set it."},
	{ID: CheckInputUserVariableNullDefault, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "A variable that is not a contract input has default = null, but one of its validations refuses null: it looks optional and is not (a variable without any default is input/user-variable-default instead).",
		Help:    "Give the variable a default its validations accept, or let the validation accept null (var.x == null ? true : ...) when the module copes without a value; allow the warning only when every object is meant to set it."},
	{ID: CheckModuleBackend, Severities: one(SeverityError), Roles: allRoles,
		Summary: "The module or a nested module declares a backend block.",
		Help:    "Remove the backend block: CAPTF's generated root configures the kubernetes backend itself."},
	{ID: CheckModuleCloud, Severities: one(SeverityError), Roles: allRoles,
		Summary: "The module or a nested module declares a cloud block.",
		Help:    "Remove the cloud block: state lives in the kubernetes backend the generated root configures."},
	{ID: CheckModuleProviderConfig, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "The module or a nested module configures a provider itself (a provider block).",
		Help:    "Prefer provider settings from the identity's environment variables; keep a provider block only for settings that cannot come from there, and allow the warning."},
	{ID: CheckModuleTofuShadow, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "A .tofu file shadows a .tf file of the same name that declares different blocks.",
		Help:    "Keep the .tf and .tofu twins declaring the same variables, outputs, resources and modules, so Terraform and OpenTofu see the same contract."},
	{ID: CheckModuleVersion, Severities: one(SeverityInfo), Roles: allRoles,
		Summary: "The root module sets no required_version (or not as a constant string).",
		Help:    "Set terraform { required_version = \">= 1.5\" } (or what the module needs) so an image built with a too old runtime fails early."},
	{ID: CheckOutputEndpointNeverSet, Severities: one(SeverityWarning), Roles: []contract.Role{contract.RoleCluster},
		Summary: "The control_plane_endpoint output is a literal null, with no path to a value.",
		Help:    "Output the endpoint the module creates, or the control_plane_endpoint input when it is set; a cluster without an endpoint stalls KubeadmControlPlane forever."},
	{ID: CheckOutputHealth, Severities: one(SeverityError), Roles: allRoles,
		Summary: "The health output has the wrong shape: not an object of state, healthy, message and reasons, or a literal state outside the enum.",
		Help:    "Output { state = pending|running|degraded|stopped|terminated|unknown, healthy = bool, message = optional string, reasons = optional list(string) }."},
	{ID: CheckOutputProviderIDListShape, Severities: []Severity{SeverityError, SeverityWarning},
		SeverityNote: "error when the output is missing or not a list; warning when its expression is not wrapped in sort() or distinct()",
		Roles:        []contract.Role{contract.RoleMachinePool},
		Summary:      "The provider_id_list output is missing or not a list, or its own expression is not wrapped in sort() or distinct().",
		Help:         "Output a list of provider IDs and wrap the output's own value expression in sort() or distinct(), for example value = sort(local.ids)."},
	{ID: CheckOutputRequired, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A contract output of the role is not declared.",
		Help:    "Declare every contract output of the role; its value may be null until known."},
	{ID: CheckOutputReserved, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "An output uses a name reserved for a future contract output (the captf_ prefix).",
		Help:    "Rename the output: names starting with captf_ are reserved for the contract."},
	{ID: CheckPoolAutoscalingIgnoreChanges, Severities: one(SeverityWarning), Roles: []contract.Role{contract.RoleMachinePool},
		Summary: "The module uses var.autoscaling but no resource ignores changes to its desired capacity.",
		Help:    "Add lifecycle { ignore_changes = [desired_capacity] } (or your provider's desired-size attribute) to the scaling group, so a cloud-side scale is not reported as drift."},

	{ID: CheckImageModulePresent, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "/captf/module has no top-level .tf, .tf.json, .tofu or .tofu.json file; the module checks are then skipped.",
		Help:    "Copy the module's files to /captf/module (COPY . /captf/module)."},
	{ID: CheckImageRuntimePresent, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "/captf/runtime is missing, a link to something outside the image, not a regular file, or not executable by the image's user.",
		Help:    "Copy the tofu or terraform binary to /captf/runtime with mode 0755."},
	{ID: CheckImageRuntimeVersion, Image: true, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "The runtime's file or link name (tofu or terraform) disagrees with the io.captf.runtime label, or the label is neither.",
		Help:    "Set io.captf.runtime to tofu or terraform, matching the binary at /captf/runtime."},
	{ID: CheckImageProvidersAbsent, Image: true, Severities: one(SeverityInfo), Roles: allRoles,
		Summary: "The image has no /captf/providers mirror, so init needs registry egress.",
		Help:    "Build a mirror with tofu providers mirror (or terraform providers mirror) into /captf/providers for a hermetic image."},
	{ID: CheckImageProvidersLayout, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "An entry of /captf/providers is neither packed (HOST/NAMESPACE/TYPE/*.zip and *.json) nor unpacked (HOST/NAMESPACE/TYPE/VERSION/TARGET/).",
		Help:    "Build /captf/providers with providers mirror and add nothing else to it."},
	{ID: CheckImageProvidersComplete, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "The mirror has a broken link, or a provider the module requires has no package for the platform checked (the builtin terraform provider is exempt).",
		Help:    "Run providers mirror with -platform for every platform the image publishes."},
	{ID: CheckImageReservedPaths, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "The image ships files under /captf/work, /var/run/captf/credentials, /captf/bin or /captf/config, where the runner mounts its own.",
		Help:    "Leave these paths empty: the Job mounts the runner, the per-run Secret, the credentials and the work directory there."},
	{ID: CheckImageLabelRole, Image: true, Severities: []Severity{SeverityError, SeverityInfo},
		SeverityNote: "info when unset; error when it differs from --role",
		Roles:        allRoles,
		Summary:      "The io.captf.role label is unset, or differs from --role.",
		Help:         "Set LABEL io.captf.role to the module's role."},
	{ID: CheckImageLabelContract, Image: true, Severities: []Severity{SeverityWarning, SeverityInfo},
		SeverityNote: "info when unset; warning when it differs from --contract",
		Roles:        allRoles,
		Summary:      "The io.captf.contract label is unset, or differs from --contract.",
		Help:         "Set LABEL io.captf.contract to the contract version the module implements (v1alpha1)."},
	{ID: CheckImageLabelCapacity, Image: true, Severities: []Severity{SeverityError, SeverityWarning, SeverityInfo},
		SeverityNote: "error when a label is present but invalid; warning when the labels differ across platforms; info when they are set on a role other than machine, or absent on machine",
		Roles:        allRoles,
		Summary:      "The io.captf.capacity and io.captf.node-info labels: invalid JSON or shape, different across platforms, set where they are ignored, or absent on a machine image.",
		Help:         "On a machine image, set io.captf.capacity to a JSON map of resource name to quantity and io.captf.node-info to {\"architecture\": ..., \"operatingSystem\": ...}, identically on every platform."},
	{ID: CheckImageUserRoot, Image: true, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "The image's User is empty, root or 0.",
		Help:    "Run as a non-root user, for example USER 65532, so the Job fits the restricted Pod Security profile."},
	{ID: CheckImageUserUnresolved, Image: true, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "The image's User is a name, not a number: permission checks are approximated and image/module-readable is skipped.",
		Help:    "Set USER to a numeric UID (for example 65532)."},
	{ID: CheckImageModuleReadable, Image: true, Severities: one(SeverityWarning), Roles: allRoles,
		Summary: "The image's numeric non-root user cannot read files or traverse directories under /captf/module or /captf/providers (up to 5 are listed).",
		Help:    "Make the files readable and the directories traversable by the image's user, for example chown -R 65532:65532 /captf."},
	{ID: CheckImageModuleLink, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A link under /captf/module does not end at a regular file inside /captf/module.",
		Help:    "Copy the file instead of linking it, or link only to files inside the module."},
	{ID: CheckImageEntrypoint, Image: true, Severities: one(SeverityInfo), Roles: allRoles,
		Summary: "The image sets ENTRYPOINT or CMD, which the runner replaces.",
		Help:    "Nothing to do; the Job runs CAPTF's runner as the entrypoint whatever the image sets."},
	{ID: CheckImagePlatform, Image: true, Severities: one(SeverityError), Roles: allRoles,
		Summary: "A single-platform image is for another platform than the one --platform asked for, or an index has no manifest for it.",
		Help:    "Publish a manifest for the platform (linux/amd64 by default), or lint the platform the image ships with --platform."},
}

// Checks returns every check, module checks first, in the reference page's
// order (a copy).
func Checks() []Check {
	out := slices.Clone(checks)
	for i := range out {
		out[i].Severities = slices.Clone(out[i].Severities)
		out[i].Roles = slices.Clone(out[i].Roles)
	}
	return out
}

// checkByID returns the check with the ID.
func checkByID(id string) (Check, bool) {
	for _, c := range checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// appliesTo reports whether the check runs for the role.
func (c Check) appliesTo(r contract.Role) bool { return slices.Contains(c.Roles, r) }
