package contract

// The fixed paths of the Image Contract and the Runtime Environment: where a
// module image keeps its runtime, module and provider mirror, and where the
// Job gives the runner its work directory, its per-run configuration and
// the identity's credentials. The controller that builds the Job, the
// runner inside it, the image builder and tfcapi-lint all read them here.
const (
	// RuntimePath is the image's tofu or terraform binary.
	RuntimePath = "/captf/runtime"
	// ModuleDir is the image's module.
	ModuleDir = "/captf/module"
	// ProvidersDir is the image's optional provider mirror.
	ProvidersDir = "/captf/providers"
	// WorkDir is the writable work directory (HOME).
	WorkDir = "/captf/work"
	// ConfigDir is where the per-run Secret is mounted.
	ConfigDir = "/captf/config"
	// RunnerDir is where the init container copies the runner to.
	RunnerDir = "/captf/bin"
	// CredentialsDir is where the identity mirror's keys are mounted, one
	// file per key.
	CredentialsDir = "/var/run/captf/credentials"
	// TerminationMessagePath is where the runner writes its result document.
	TerminationMessagePath = "/dev/termination-log"
)

// MainFile and TFVarsFile are the rendered root and its variables: the keys
// of the durable and per-run inputs Secrets and the files the runner writes
// into the generated root.
const (
	MainFile   = "main.tf.json"
	TFVarsFile = "terraform.tfvars.json"
)

// The OCI labels of a module image (Image Contract "OCI labels").
const (
	LabelContract       = "io.captf.contract"
	LabelRole           = "io.captf.role"
	LabelRuntime        = "io.captf.runtime"
	LabelRuntimeVersion = "io.captf.runtime.version"
	// LabelCapacity holds a JSON object of resource name to quantity, for
	// example {"cpu":"2","memory":"4Gi"}.
	LabelCapacity = "io.captf.capacity"
	// LabelNodeInfo holds a JSON object with architecture (amd64, arm64,
	// s390x or ppc64le) and operatingSystem, at least one of them.
	LabelNodeInfo = "io.captf.node-info"
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
)

// The values of io.captf.runtime.
const (
	RuntimeTofu      = "tofu"
	RuntimeTerraform = "terraform"
)
