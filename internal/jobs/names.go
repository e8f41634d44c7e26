package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
)

// The fixed names and paths of a Job (reference-facts §8.1, book: Runtime
// Environment and Image Contract).
const (
	// RunnerContainer is the init container that copies the runner binary.
	RunnerContainer = "runner"
	// SourceContainer is the module container; its termination message is
	// the runner's result document.
	SourceContainer = "source"

	// RunnerBinary is the runner inside the runner image.
	RunnerBinary = "/runner"
	// RunnerDir is where the init container copies the runner to.
	RunnerDir = "/captf/bin"
	// RunnerPath is the copied runner the module container runs.
	RunnerPath = RunnerDir + "/runner"
	// RuntimePath is the image's tofu or terraform binary.
	RuntimePath = "/captf/runtime"
	// ModuleDir is the image's module.
	ModuleDir = "/captf/module"
	// ProvidersDir is the image's optional provider mirror.
	ProvidersDir = "/captf/providers"
	// WorkDir is the writable work directory (HOME).
	WorkDir = "/captf/work"
	// TmpDir is the writable temporary directory (TMPDIR).
	TmpDir = "/tmp"
	// ConfigDir is where the per-run Secret is mounted.
	ConfigDir = "/captf/config"
	// CredentialsDir is where the identity mirror's keys are mounted, one
	// file per key.
	CredentialsDir = "/var/run/captf/credentials"
	// TerminationMessagePath is where the runner writes its result document
	// (the runner's default --result).
	TerminationMessagePath = "/dev/termination-log"

	// Volume names.
	RunnerVolume = "runner"
	WorkVolume   = "work"
	TmpVolume    = "tmp"
	ConfigVolume = "config"
	CredsVolume  = "creds"

	// MainFile and TFVarsFile are the per-run Secret's keys for the rendered
	// root and its variables; the runner reads them from ConfigDir.
	MainFile   = "main.tf.json"
	TFVarsFile = "terraform.tfvars.json"
	// RestoreDir is the subdirectory of ConfigDir holding a restore's backup
	// chunks as files 0, 1, …
	RestoreDir = "restore"
	// restoreKeyPrefix prefixes the per-run Secret key of a backup chunk
	// (a Secret key cannot hold a slash; the volume maps it to restore/<i>).
	restoreKeyPrefix = "restore-"

	// RunSecretPrefix prefixes the per-run Secret: captf-run-<job>.
	RunSecretPrefix = "captf-run-"

	// DefaultServiceAccount is the runner ServiceAccount CAPTF manages in
	// each namespace.
	DefaultServiceAccount = identity.RunnerName
	// RunnerUID is the runner's user ID, the init container's runAsUser and
	// the default pod fsGroup (so a non-root module user can read the 0440
	// credential files through that group).
	RunnerUID int64 = 65532
	// SecretFileMode is the mode of the per-run and credential files (0440).
	SecretFileMode int32 = 0o440
	// TerminationGracePeriodSeconds gives the runtime time to finish provider
	// calls, write state and release the lock after SIGTERM.
	TerminationGracePeriodSeconds int64 = 600
	// StopTimeout is the runner's --stop-timeout: the grace period less the
	// margin the runner needs to write its result.
	StopTimeout = "570s"
)

// RunSecretName is the per-run Secret of a Job, captf-run-<job>.
func RunSecretName(jobName string) string { return RunSecretPrefix + jobName }

// LabelValue keeps a label value within 63 characters: a longer value
// becomes the first 16 hex characters of its SHA-256 (reference-facts §9),
// the same rule the state backend labels follow.
func LabelValue(v string) string {
	if len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:8])
}

// reservedEnv reports whether an environment variable name belongs to the
// runner and the Job itself (book: Tuning Jobs, "Environment variables"):
// every name starting with TF_ or KUBE_.
func reservedEnv(name string) bool {
	return strings.HasPrefix(name, "TF_") || strings.HasPrefix(name, "KUBE_")
}
