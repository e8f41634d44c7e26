// Command quickstart runs the book's Quick Start on the local environment:
// a real control plane, Cluster API, a loopback registry and the process
// kubelet (test/env), with CAPTF's manager in-process and the no-op module
// images built from modules/noop. It applies the identity and the default
// flavor with one control-plane machine and no workers, shows progress
// while the Jobs run, and ends with a table of each object's Ready
// condition and the Jobs it ran. It must run as root (the process kubelet
// chroots into each image).
//
//	go run ./hack/quickstart [-keep-running] [-timeout 10m]
//	go run ./hack/quickstart -dev    # the environment and the manager only, until Ctrl-C
//
// Once the environment runs (with -dev, or after the table with
// -keep-running) it prints a line to paste into another shell and writes
// the same settings to _out/dev/env.sh, which the book's Quick Start
// sources: PATH gets the pinned kubectl, clusterctl and tofu, kubectl-captf
// and tfcapi-lint; KUBECONFIG points at the environment; CAPTF_REGISTRY is
// the loopback registry (host:port) holding the runner and the no-op module
// images (captf/noop-<role>:v0.1.0-opentofu). The file is removed when the
// command ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func main() {
	keep := flag.Bool("keep-running", false, "keep the environment running after the table, until Ctrl-C")
	timeout := flag.Duration("timeout", 10*time.Minute, "how long to wait for the objects to be Ready")
	verbose := flag.Bool("v", false, "log the in-process components to stderr")
	dev := flag.Bool("dev", false, "start the environment, the images and the manager, apply nothing, and run until Ctrl-C")
	flag.Parse()
	os.Exit(run(*keep, *dev, *timeout, *verbose))
}

func run(keep, dev bool, timeout time.Duration, verbose bool) int {
	logger := logr.Discard()
	if verbose {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail(fmt.Errorf("the local environment's kubelet needs root"))
	}
	root, err := tools.RepoRoot()
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp("", "captf-quickstart-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)

	fmt.Println("Building what is missing (the first run on a machine builds Kubernetes, etcd and OpenTofu from source)...")
	for _, tool := range []string{"kubernetes", "etcd", "opentofu", "generators"} {
		if _, err := tools.Dir(tool); err != nil {
			return fail(err)
		}
	}
	runner, err := framework.BuildRunner(tmp)
	if err != nil {
		return fail(err)
	}
	crds, err := framework.RenderedCRDs(root, tmp)
	if err != nil {
		return fail(err)
	}
	images := make(chan framework.Images, 1)
	fmt.Println("Starting the local environment (etcd, kube-apiserver, kube-controller-manager, Cluster API, registry, kubelet) and the CAPTF manager...")
	e, err := env.Start(ctx, env.Options{
		CAPI: true, Kubelet: true, Registry: true, Logger: logger, CRDPaths: []string{crds},
		Manager: func(ctx context.Context, e *env.Env) error {
			imgs, err := framework.PushImages(ctx, root, e, runner)
			if err != nil {
				return err
			}
			if err := framework.RunnerClusterRole(ctx, root, e.Client); err != nil {
				return err
			}
			images <- imgs
			return framework.RunManager(ctx, e, framework.ManagerOptions(imgs.Runner))
		},
	})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = e.Stop() }()
	fmt.Println("Kubeconfig:", e.KubeconfigPath)

	var imgs framework.Images
	select {
	case imgs = <-images:
	case <-time.After(5 * time.Minute):
		return fail(fmt.Errorf("the images were not pushed"))
	case <-ctx.Done():
		return 1
	}
	fmt.Printf("Images: runner %s, no-op modules %s, %s, %s\n", imgs.Runner, imgs.Cluster, imgs.Machine, imgs.MachinePool)
	c, err := client.New(e.Config, client.Options{Scheme: setup.NewScheme()})
	if err != nil {
		return fail(err)
	}
	// The namespace an installation puts CAPTF in, and the identity
	// template its credentials Secret.
	if err := framework.Apply(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "captf-system"}}); err != nil {
		return fail(err)
	}
	// What is applied goes through CAPTF's admission webhooks.
	if err := framework.WaitForWebhooks(ctx, c, 2*time.Minute); err != nil {
		return fail(err)
	}
	if dev {
		written, err := ready(ctx, root, tmp, e, "The environment and the manager run; Ctrl-C stops them.")
		if err != nil {
			return fail(err)
		}
		defer os.Remove(written)
		<-ctx.Done()
		return 0
	}
	q := framework.QuickStart{Root: root, Client: c, Images: imgs, Namespace: "team-a", Cluster: "my-cluster"}
	fmt.Println("Applying the identity aws-prod and Cluster my-cluster (one control-plane machine, no workers) in namespace team-a...")
	if err := q.Apply(ctx); err != nil {
		return fail(err)
	}
	rows, ok := q.Watch(ctx, os.Stdout, timeout)
	fmt.Println()
	framework.Table(os.Stdout, rows)
	if !ok {
		_, why := framework.Done(rows)
		return fail(fmt.Errorf("not done after %s: %s", timeout, why))
	}
	fmt.Println("\nThe Quick Start is done: the TerraformCluster and the control-plane TerraformMachine are Ready, the Cluster and Machine Provisioned.")
	if keep {
		written, err := ready(ctx, root, tmp, e, "The environment keeps running; Ctrl-C stops it.")
		if err != nil {
			return fail(err)
		}
		defer os.Remove(written)
		<-ctx.Done()
	}
	return 0
}

// envFile is where the settings of the running environment are written,
// relative to the repository root.
const envFile = "_out/dev/env.sh"

// ready writes the settings another shell needs to envFile and prints the
// headline and the same settings as a line to paste. It returns the file
// written, for the caller to remove when the environment stops.
func ready(ctx context.Context, root, tmp string, e *env.Env, headline string) (string, error) {
	vars, err := settings(ctx, root, tmp, e)
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, envFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	var file strings.Builder
	file.WriteString("# The settings of the local environment `make dev` runs; removed when it stops.\n")
	for _, v := range vars {
		file.WriteString("export " + v.name + "=" + v.quoted() + "\n")
	}
	// The environment has no network: clusterctl must not look for a
	// newer release of itself.
	file.WriteString("export CLUSTERCTL_DISABLE_VERSIONCHECK=true\n")
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		return "", err
	}
	line := "export"
	for _, v := range vars {
		line += " " + v.name + "=" + v.value
	}
	fmt.Println(headline + " In another shell, for kubectl, clusterctl, kubectl captf, tfcapi-lint and tofu:")
	fmt.Println(line)
	fmt.Printf("or: source %s\n", envFile)
	return path, nil
}

// setting is one exported variable of the environment.
type setting struct{ name, value string }

// quoted is the value in double quotes ($PATH stays a reference).
func (s setting) quoted() string { return `"` + s.value + `"` }

// settings builds kubectl-captf and tfcapi-lint into tmp/bin, links the
// pinned tofu there, and returns the variables that put the pinned kubectl,
// clusterctl and that folder on PATH, point KUBECONFIG at the environment
// and name its registry, so that `kubectl get terraformclusters -A`,
// `clusterctl describe cluster`, `kubectl captf status -A` and
// `tfcapi-lint test` work at once.
func settings(ctx context.Context, root, tmp string, e *env.Env) ([]setting, error) {
	kubectl, err := tools.Dir("kubectl")
	if err != nil {
		return nil, err
	}
	clusterctl, err := tools.Dir("clusterapi")
	if err != nil {
		return nil, err
	}
	tofu, err := tools.OpenTofu.Path()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	for _, name := range []string{"kubectl-captf", "tfcapi-lint"} {
		if err := tools.Build(ctx, "./cmd/"+name, filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("failed to build %s: %w", name, err)
		}
	}
	if err := os.Symlink(tofu, filepath.Join(bin, "tofu")); err != nil {
		return nil, err
	}
	return []setting{
		{"PATH", strings.Join([]string{kubectl, clusterctl, bin}, ":") + ":$PATH"},
		{"KUBECONFIG", e.KubeconfigPath},
		{"CAPTF_REGISTRY", e.Registry},
	}, nil
}
