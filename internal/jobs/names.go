package jobs

import (
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
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
	// RunnerPath is the copied runner the module container runs.
	RunnerPath = contract.RunnerDir + "/runner"
	// TmpDir is the writable temporary directory (TMPDIR).
	TmpDir = "/tmp"

	// Volume names.
	RunnerVolume = "runner"
	WorkVolume   = "work"
	TmpVolume    = "tmp"
	ConfigVolume = "config"
	CredsVolume  = "creds"

	// RestoreDir is the subdirectory of the config directory holding a restore's backup
	// chunks as files 0, 1, …
	RestoreDir = "restore"
	// restoreKeyPrefix prefixes the per-run Secret key of a backup chunk
	// (a Secret key cannot hold a slash; the volume maps it to restore/<i>).
	restoreKeyPrefix = "restore-"

	// RunSecretPrefix prefixes the per-run Secret: captf-run-<job>.
	RunSecretPrefix = result.RunSecretPrefix

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
// The runner reads its owners for the plan detail Secret.
func RunSecretName(jobName string) string { return RunSecretPrefix + jobName }

// reservedEnv reports whether an environment variable name belongs to the
// runner and the Job itself (book: Tuning Jobs, "Environment variables"):
// every name starting with TF_ or KUBE_.
func reservedEnv(name string) bool {
	return strings.HasPrefix(name, "TF_") || strings.HasPrefix(name, "KUBE_")
}
