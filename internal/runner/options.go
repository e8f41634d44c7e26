package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// The defaults of the run flags' timeouts; the defaults of its paths are
// the Image Contract's (internal/contract).
const (
	DefaultLockTimeout = 5 * time.Minute
	DefaultStopTimeout = time.Minute
)

// Exit codes of the runner binary.
const (
	// ExitOK: every step succeeded, or an apply's plan had no changes.
	ExitOK = 0
	// ExitFailure: a step failed, the run was interrupted, blocked or its
	// plan changed, or preflight/preparation failed. A failed step's own
	// exit code is used when it is greater than 1.
	ExitFailure = 1
	// ExitUsage: unknown operation, bad flag, unexpected argument or bad
	// logging flags.
	ExitUsage = 2
)

// Options are the flags of `runner run`.
type Options struct {
	Op               infrav1.Operation
	Bin              []string
	Module           string
	Providers        string
	Workdir          string
	Config           string
	Result           string
	Image            string
	LockTimeout      time.Duration
	StopTimeout      time.Duration
	BackendConfig    []string
	ForceUnlock      string
	GuardDeletes     bool
	InputsHash       string
	AllowDeletesHash string
	ExpectPlan       string
	EventObject      string
	JobName          string
	RestoreChunks    int
	RestoreResources int
	// EventsKubeconfig (hidden flag --events-kubeconfig) points the event
	// client at a kubeconfig when the runner is not in a cluster.
	EventsKubeconfig string
}

// ObjectRef is the object the runner's events are about, parsed from
// --event-object.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name, UID string
}

var operations = []infrav1.Operation{
	infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationRefresh,
	infrav1.OperationDrift, infrav1.OperationPlan, infrav1.OperationRestore,
}

// AddRunFlags registers the flags of `runner run` on fs, bound to o.
func AddRunFlags(fs *pflag.FlagSet, o *Options) {
	fs.Var(opValue{&o.Op}, "op", "operation to run: apply, destroy, refresh, drift, plan or restore")
	fs.StringArrayVar(&o.Bin, "bin", nil, "runtime command, one flag per argv element (default "+contract.RuntimePath+")")
	fs.StringVar(&o.Module, "module", contract.ModuleDir, "module directory of the image")
	fs.StringVar(&o.Providers, "providers", contract.ProvidersDir, "provider mirror of the image, used when it exists")
	fs.StringVar(&o.Workdir, "workdir", contract.WorkDir, "writable work directory; the generated root is <workdir>/root")
	fs.StringVar(&o.Config, "config", contract.ConfigDir, "per-run Secret mount holding main.tf.json and terraform.tfvars.json (restore: restore/0, restore/1, ...)")
	fs.StringVar(&o.Result, "result", contract.TerminationMessagePath, "where to write the result document")
	fs.StringVar(&o.Image, "image", "", "module image reference, echoed in the result document")
	fs.DurationVar(&o.LockTimeout, "lock-timeout", DefaultLockTimeout, "state lock timeout, passed as -lock-timeout=<n>s")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", DefaultStopTimeout, "after SIGTERM, how long the running step gets before SIGKILL")
	fs.StringArrayVar(&o.BackendConfig, "backend-config", nil, "backend configuration key=value, passed to init as -backend-config= (repeatable)")
	fs.StringVar(&o.ForceUnlock, "force-unlock", "", "stale state lock ID to force-unlock right after init")
	fs.BoolVar(&o.GuardDeletes, "guard-deletes", false, "stop an apply before a plan that deletes or replaces a resource, unless --allow-deletes-hash equals --inputs-hash")
	fs.StringVar(&o.InputsHash, "inputs-hash", "", "hash of the rendered inputs")
	fs.StringVar(&o.AllowDeletesHash, "allow-deletes-hash", "", "inputs hash approved for a destructive plan")
	fs.StringVar(&o.ExpectPlan, "expect-plan", "", "approved plan hash; an apply whose plan hashes differently stops with plan-changed")
	fs.StringVar(&o.EventObject, "event-object", "", "<apiVersion>/<kind>/<namespace>/<name>/<uid> of the object events go on (no events when unset)")
	fs.StringVar(&o.JobName, "job-name", "", "name of the Job the events relate to and the plan detail Secret captf-plan-<job> is named after")
	fs.IntVar(&o.RestoreChunks, "restore-chunks", 0, "number of backup chunks under <config>/restore")
	fs.IntVar(&o.RestoreResources, "restore-resources", 0, "managed resources the backup holds; when not 0, state list must show at least one")
	fs.StringVar(&o.EventsKubeconfig, "events-kubeconfig", "", "kubeconfig for events outside a cluster")
	_ = fs.MarkHidden("events-kubeconfig")
}

// Validate checks the options after parsing; an error is a usage error.
func (o *Options) Validate(args []string) error {
	var errs []error
	if len(args) > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", args))
	}
	if o.Op == "" {
		errs = append(errs, errors.New("--op is required"))
	}
	if len(o.Bin) == 0 {
		o.Bin = []string{contract.RuntimePath}
	}
	if o.Bin[0] == "" {
		errs = append(errs, errors.New("--bin must not be empty"))
	}
	for name, v := range map[string]string{"--module": o.Module, "--workdir": o.Workdir, "--config": o.Config, "--result": o.Result} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s must not be empty", name))
		}
	}
	if o.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("--lock-timeout must not be negative, got %s", o.LockTimeout))
	}
	if o.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("--stop-timeout must not be negative, got %s", o.StopTimeout))
	}
	for _, bc := range o.BackendConfig {
		if bc == "" {
			errs = append(errs, errors.New("--backend-config must not be empty"))
		}
	}
	if o.RestoreChunks < 0 || o.RestoreResources < 0 {
		errs = append(errs, errors.New("--restore-chunks and --restore-resources must not be negative"))
	}
	if o.Op == infrav1.OperationRestore && o.RestoreChunks == 0 {
		errs = append(errs, errors.New("--op=restore needs --restore-chunks of at least 1"))
	}
	if o.Op != "" && o.Op != infrav1.OperationRestore && o.RestoreChunks > 0 {
		errs = append(errs, fmt.Errorf("--restore-chunks is only valid with --op=restore, not %s", o.Op))
	}
	if o.EventObject != "" {
		if _, err := ParseObjectRef(o.EventObject); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LockTimeoutFlag is the -lock-timeout= flag every locking command gets.
func (o *Options) LockTimeoutFlag() string {
	return fmt.Sprintf("-lock-timeout=%ds", int64((o.LockTimeout+time.Second-1)/time.Second))
}

// BackendConfigValue returns the value of the backend configuration key
// (the last one wins, as for init).
func (o *Options) BackendConfigValue(key string) (string, bool) {
	val, found := "", false
	for _, bc := range o.BackendConfig {
		if k, v, ok := strings.Cut(bc, "="); ok && strings.TrimSpace(k) == key {
			val, found = strings.TrimSpace(v), true
		}
	}
	return val, found
}

// ParseObjectRef parses <apiVersion>/<kind>/<namespace>/<name>/<uid>; the
// apiVersion may itself hold a slash (group/version).
func ParseObjectRef(s string) (ObjectRef, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 && len(parts) != 6 {
		return ObjectRef{}, fmt.Errorf("--event-object %q is not <apiVersion>/<kind>/<namespace>/<name>/<uid>", s)
	}
	n := len(parts)
	ref := ObjectRef{
		APIVersion: strings.Join(parts[:n-4], "/"),
		Kind:       parts[n-4],
		Namespace:  parts[n-3],
		Name:       parts[n-2],
		UID:        parts[n-1],
	}
	for _, p := range parts {
		if p == "" {
			return ObjectRef{}, fmt.Errorf("--event-object %q has an empty part; want <apiVersion>/<kind>/<namespace>/<name>/<uid>", s)
		}
	}
	return ref, nil
}

type opValue struct{ op *infrav1.Operation }

func (v opValue) String() string {
	if v.op == nil {
		return ""
	}
	return string(*v.op)
}

func (v opValue) Set(s string) error {
	for _, op := range operations {
		if string(op) == s {
			*v.op = op
			return nil
		}
	}
	names := make([]string, len(operations))
	for i, op := range operations {
		names[i] = string(op)
	}
	return fmt.Errorf("unknown operation %q, want one of %s", s, strings.Join(names, ", "))
}

func (opValue) Type() string { return "string" }
