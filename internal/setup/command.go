package setup

import (
	"context"
	"fmt"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// defaultVerbosity is the manager's -v default.
const defaultVerbosity = 2

// Command is the manager's command line: the flags of reference-facts §4
// (underscores accepted for dashes), the component-base logging flags and
// their feature gates, --version and a version subcommand. Run it with
// ExecuteContext; the context ending stops the manager.
func Command() *cobra.Command {
	o := DefaultOptions()
	logCfg := logsapi.NewLoggingConfiguration()
	logCfg.Verbosity = defaultVerbosity
	gates := featuregate.NewFeatureGate()
	utilruntime.Must(logsapi.AddFeatureGates(gates))
	var showVersion bool

	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the CAPTF manager: the Cluster API infrastructure provider that runs Terraform/OpenTofu modules as Jobs",
		Args:  cobra.NoArgs,
		// Errors are returned to main, which prints them once.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				printVersion(cmd)
				return nil
			}
			// The command may run more than once in one process (tests).
			logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
			if err := logsapi.ValidateAndApply(logCfg, gates); err != nil {
				return fmt.Errorf("invalid logging flags: %w", err)
			}
			defer klog.Flush()
			cliflag.PrintFlags(cmd.Flags())
			o.Complete()
			if err := o.Validate(); err != nil {
				return fmt.Errorf("refusing to start: %w", err)
			}
			ctrl.SetLogger(klog.Background())
			setGoMemoryLimit(memlimit.FromCgroup)
			cfg, err := restConfig(o.Kubeconfig)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			mgr, err := New(ctx, cfg, o)
			if err != nil {
				return err
			}
			klog.InfoS("Starting the manager", "version", BuildVersion(), "commit", BuildCommit(), "contract", contract.Version, "runnerImage", o.RunnerImage)
			if err := mgr.Start(ctx); err != nil {
				return fmt.Errorf("manager stopped: %w", err)
			}
			return nil
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	fs := cmd.Flags()
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	logsapi.AddFlags(logCfg, fs)
	gates.AddFlag(fs)
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")

	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { printVersion(cmd) },
	})
	return cmd
}

func printVersion(cmd *cobra.Command) {
	fmt.Fprintf(cmd.OutOrStdout(), "%s (commit %s, contract %s)\n", BuildVersion(), orUnknown(BuildCommit()), contract.Version)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// restConfig loads --kubeconfig when set, else $KUBECONFIG, the in-cluster
// configuration or ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("failed to load --kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("failed to find the API server: %w", err)
	}
	return cfg, nil
}
