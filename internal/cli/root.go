package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// options are what every command shares.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// now is the clock rendering ages (tests fix it).
	now func() time.Time
	// kube builds the clients on first use, so --help and version never
	// read a kubeconfig.
	kube func() (*kube, error)
}

// NewCommand is kubectl-captf's root command. Run as a kubectl plugin
// (kubectl-captf on PATH, called as `kubectl captf ...`) or on its own.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{
		flags:   genericclioptions.NewConfigFlags(true),
		streams: streams,
		now:     time.Now,
	}
	var cached *kube
	o.kube = func() (*kube, error) {
		if cached != nil {
			return cached, nil
		}
		k, err := newKube(o.flags)
		cached = k
		return k, err
	}
	root := &cobra.Command{
		Use: "kubectl-captf",
		// Usage lines read as the plugin is run: kubectl captf ...
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl captf"},
		Short:       "Operate CAPTF's TerraformClusters, TerraformMachines and TerraformMachinePools",
		Long: `Operate CAPTF's TerraformClusters, TerraformMachines and TerraformMachinePools:
their status and last runs (with kubectl's output formats and --watch),
the plan awaiting approval, approvals, state restores, abandoning a
deleting object whose state is lost, Job logs, and reconcile now, drift
check now, suspend and resume.

Objects are named KIND/NAME, KIND being terraformcluster (tc),
terraformmachine (tm) or terraformmachinepool (tmp).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newStatusCommand(o),
		newPlanCommand(o),
		newRestoreCommand(o),
		newAbandonCommand(o),
		newUnlockCommand(o),
		newReconcileCommand(o),
		newDriftCommand(o),
		newSuspendCommand(o),
		newResumeCommand(o),
		newLogsCommand(o),
		newVersionCommand(o),
	)
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(streams.ErrOut, "error:", err)
		return 1
	}
	return 0
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

// oneTarget parses the one KIND/NAME argument of a command.
func oneTarget(args []string) (target, error) {
	if len(args) != 1 {
		return target{}, fmt.Errorf("name one object as KIND/NAME, for example terraformcluster/my-cluster")
	}
	return parseTarget(args[0])
}

// oneObject parses the one KIND/NAME argument and builds the clients.
func (o *options) oneObject(args []string) (target, *kube, error) {
	t, err := oneTarget(args)
	if err != nil {
		return target{}, nil, err
	}
	k, err := o.kube()
	return t, k, err
}
