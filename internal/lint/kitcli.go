package lint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/pflag"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint/kit"
)

type testFlags struct {
	role           string
	runtime        string
	binary         string
	pluginDirs     []string
	clusterOutputs string
	variables      string
	write          bool
}

func testFlagSet(stderr io.Writer) (*pflag.FlagSet, *testFlags, *pflag.Flag) {
	fs := newFlagSet("test", stderr)
	c := &testFlags{}
	fs.StringVar(&c.role, "role", "", "the role the module implements: cluster, machine or machinepool (required)")
	fs.StringVar(&c.runtime, "runtime", contract.RuntimeTofu, "the runtime whose test command runs the harness: tofu or terraform (1.7 or later)")
	fs.StringVar(&c.binary, "runtime-binary", "", "the runtime binary (default $"+kit.RuntimeBinaryEnv+", else the runtime's name in PATH)")
	fs.StringSliceVar(&c.pluginDirs, "plugin-dir", nil, "a provider mirror init installs from (repeatable); init never reaches a registry")
	fs.StringVar(&c.clusterOutputs, "cluster-outputs", "", "a JSON file holding the cluster module's exports, passed as captf_cluster_outputs (machine and machinepool)")
	fs.StringVar(&c.variables, "variables", "", "a JSON file holding an object of user variables, as spec.variables")
	fs.Duration("timeout", kit.DefaultTimeout, "how long init and test may take together")
	fs.BoolVar(&c.write, "write", false, "write the harness to "+kit.HarnessFile+" in the module and run nothing")
	return fs, c, fs.Lookup("timeout")
}

func initFlagSet(stderr io.Writer) (*pflag.FlagSet, *string) {
	fs := newFlagSet("init", stderr)
	return fs, fs.String("role", "", "the role the new module implements: cluster, machine or machinepool (required)")
}

func parseRole(s string) (contract.Role, error) {
	if s == "" {
		return "", usageErrorf("--role is required: cluster, machine or machinepool")
	}
	r, err := contract.ParseRole(s)
	if err != nil {
		return "", usageErrorf("--role: %v", err)
	}
	return r, nil
}

func runTest(args []string, stdout, stderr io.Writer) int {
	fs, c, timeoutFlag := testFlagSet(stderr)
	dir, code, ok := parseArg(fs, args, "test", "module directory", stdout, stderr)
	if !ok {
		return code
	}
	role, err := parseRole(c.role)
	if err != nil {
		return usage(stderr, err)
	}
	if c.runtime != contract.RuntimeTofu && c.runtime != contract.RuntimeTerraform {
		return usage(stderr, usageErrorf("--runtime %q: want tofu or terraform", c.runtime))
	}
	timeout, _ := fs.GetDuration(timeoutFlag.Name)
	if timeout <= 0 {
		return usage(stderr, usageErrorf("--timeout must be positive"))
	}
	o := kit.TestOptions{Role: role, Runtime: c.runtime, Binary: c.binary, PluginDirs: c.pluginDirs, Timeout: timeout}
	if c.clusterOutputs != "" {
		if role == contract.RoleCluster {
			return usage(stderr, usageErrorf("--cluster-outputs: the cluster role has no captf_cluster_outputs input"))
		}
		b, err := os.ReadFile(c.clusterOutputs)
		if err != nil {
			return usage(stderr, usageErrorf("--cluster-outputs: %v", err))
		}
		o.ClusterOutputs = b
	}
	if c.variables != "" {
		b, err := os.ReadFile(c.variables)
		if err != nil {
			return usage(stderr, usageErrorf("--variables: %v", err))
		}
		o.Variables = b
	}
	if c.write {
		p, err := kit.WriteHarness(dir, o)
		if err != nil {
			return kitError(stderr, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", p)
		return ExitOK
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := kit.Test(ctx, dir, o)
	if err != nil {
		return kitError(stderr, err)
	}
	passed := 0
	for _, s := range r.Scenarios {
		if len(s.Failures) == 0 {
			passed++
			fmt.Fprintf(stdout, "PASS %s\n", s.Scenario)
			continue
		}
		fmt.Fprintf(stdout, "FAIL %s\n", s.Scenario)
		for _, f := range s.Failures {
			fmt.Fprintf(stdout, "  %s\n", f)
		}
	}
	fmt.Fprintf(stdout, "%d scenario(s): %d passed, %d failed\n", len(r.Scenarios), passed, len(r.Scenarios)-passed)
	if passed != len(r.Scenarios) {
		return ExitFindings
	}
	return ExitOK
}

// kitError prints a kit error: a runtime or module problem is exit 2,
// anything in the caller's inputs (variables, cluster outputs) exit 3.
func kitError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "tfcapi-lint: %v\n", err)
	var re *kit.RuntimeError
	var ee *kit.ExistsError
	if errors.As(err, &re) || errors.As(err, &ee) {
		return ExitUnparsable
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return ExitUnparsable
	}
	return ExitUsage
}

func runInit(args []string, stdout, stderr io.Writer) int {
	fs, role := initFlagSet(stderr)
	dir, code, ok := parseArg(fs, args, "init", "module directory", stdout, stderr)
	if !ok {
		return code
	}
	r, err := parseRole(*role)
	if err != nil {
		return usage(stderr, err)
	}
	files, err := kit.Init(dir, r)
	if err != nil {
		return kitError(stderr, err)
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "created %s\n", f)
	}
	fmt.Fprintf(stdout, "next: tfcapi-lint module %s --role %s --strict && tfcapi-lint test %s --role %s\n", dir, r, dir, r)
	return ExitOK
}
