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
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
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
	// What is applied goes through CAPTF's admission webhooks.
	if err := framework.WaitForWebhooks(ctx, c, 2*time.Minute); err != nil {
		return fail(err)
	}
	if dev {
		line, err := readyLine(root, tmp, e.KubeconfigPath)
		if err != nil {
			return fail(err)
		}
		fmt.Println("The environment and the manager run; Ctrl-C stops them. In another shell, for kubectl, clusterctl and kubectl captf:")
		fmt.Println(line)
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
		line, err := readyLine(root, tmp, e.KubeconfigPath)
		if err != nil {
			return fail(err)
		}
		fmt.Println("The environment keeps running; Ctrl-C stops it. In another shell, for kubectl, clusterctl and kubectl captf:")
		fmt.Println(line)
		<-ctx.Done()
	}
	return 0
}

// readyLine builds kubectl-captf into tmp/bin and returns the line that
// puts the pinned kubectl, clusterctl and the plugin on PATH and points
// KUBECONFIG at the environment, so that `kubectl get terraformclusters
// -A`, `clusterctl describe cluster` and `kubectl captf status -A` work at
// once.
func readyLine(root, tmp, kubeconfig string) (string, error) {
	kubectl, err := tools.Dir("kubectl")
	if err != nil {
		return "", err
	}
	clusterctl, err := tools.Dir("clusterapi")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "bin")
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "kubectl-captf"), "./cmd/kubectl-captf")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build kubectl-captf: %w: %s", err, out)
	}
	return "export PATH=" + strings.Join([]string{kubectl, clusterctl, bin}, ":") + ":$PATH KUBECONFIG=" + kubeconfig, nil
}
