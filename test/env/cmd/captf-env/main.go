// Command captf-env runs CAPTF's local environment until interrupted: etcd,
// kube-apiserver and kube-controller-manager on 127.0.0.1, Cluster API's
// controllers, a loopback OCI registry, the process kubelet and, when asked,
// the CAPTF manager. Missing third-party binaries are built first (once per
// machine). It prints the kubeconfig path and stops everything on SIGINT or
// SIGTERM. Setup commands (-setup, e.g. pushing images to the registry) run
// once it is up, then the manager (-manager), which serves CAPTF's admission
// webhooks on 127.0.0.1 with a generated CA (captf-validating-webhook-configuration
// is installed once it answers). It must run as root (the kubelet uses mount namespaces and
// chroot).
//
// With -control-plane-kubeconfig it uses a control plane that another process runs (and
// leaves it running on exit): this is how env.Options.Separate runs the
// registry, Cluster API and the kubelet outside a race-instrumented test
// binary. `captf-env push-images` builds and pushes the runner and no-op
// module images to a running environment's registry.
//
//	go run ./test/env/cmd/captf-env [flags]
//	go run ./test/env/cmd/captf-env push-images -registry host:port [-runner bin] [-runtime opentofu|terraform|none]
package main

import (
	"context"
	"encoding/json"
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
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "push-images" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := pushImages(ctx, os.Args[2:])
		stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "captf-env push-images: %v\n", err)
			os.Exit(1)
		}
		return
	}
	var crds, managerArgs, setups, extraNodes list
	dir := flag.String("dir", "", "data folder (default: a new temporary folder, removed on exit unless -keep)")
	keep := flag.Bool("keep", false, "keep the data folder on exit")
	kubeconfig := flag.String("control-plane-kubeconfig", "", "admin kubeconfig of a running control plane to use instead of starting one (left running on exit)")
	noCAPI := flag.Bool("no-capi", false, "do not run Cluster API's controllers")
	noCAPIWebhooks := flag.Bool("no-capi-webhooks", false, "run Cluster API's controllers without their admission webhooks")
	noKubelet := flag.Bool("no-kubelet", false, "do not run the process kubelet")
	noRegistry := flag.Bool("no-registry", false, "do not serve the loopback registry")
	podNetwork := flag.Bool("pod-network", false, "give pods network namespaces and addresses of their own, and serve the API server on the pod network's host address "+
		"(with -control-plane-kubeconfig: join the pod network of that control plane)")
	manager := flag.String("manager", "", "CAPTF manager binary to run against the environment (KUBECONFIG is set for it)")
	verbose := flag.Bool("v", false, "log the in-process components (Cluster API, kubelet) to stderr")
	flag.Var(&extraNodes, "extra-node", `a further Node, run by a kubelet of its own, as JSON {"name":…,"labels":{…},"taints":[…]} (repeatable)`)
	flag.Var(&crds, "crds", "extra CRD file or folder to install, e.g. config/crd/bases (repeatable)")
	flag.Var(&managerArgs, "manager-arg", "argument for the -manager binary (repeatable)")
	flag.Var(&setups, "setup", "shell command run once the environment is up and before -manager, e.g. to push images (repeatable; "+
		"it gets KUBECONFIG, CAPTF_ENV_REGISTRY and CAPTF_ENV_DIR; a failure stops the environment)")
	envFile := flag.String("env-file", "", "write KUBECONFIG, CAPTF_ENV_REGISTRY and CAPTF_ENV_DIR (NAME=value lines) to this file once ready")
	flag.Parse()

	logger := logr.Discard()
	if *verbose {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(logger)

	opts := env.Options{
		ControllerManager: true,
		CAPI:              !*noCAPI,
		NoCAPIWebhooks:    *noCAPIWebhooks,
		Kubeconfig:        *kubeconfig,
		Kubelet:           !*noKubelet,
		Registry:          !*noRegistry,
		PodNetwork:        *podNetwork,
		CRDPaths:          crds,
		Dir:               *dir,
		KeepDir:           *keep,
		Logger:            logger,
	}
	for _, n := range extraNodes {
		var node env.Node
		if err := json.Unmarshal([]byte(n), &node); err != nil {
			fmt.Fprintf(os.Stderr, "captf-env: -extra-node %s: %v\n", n, err)
			os.Exit(2)
		}
		opts.ExtraNodes = append(opts.ExtraNodes, node)
	}
	if opts.Kubelet && os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "captf-env: the process kubelet needs root (or pass -no-kubelet)")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	fmt.Fprintln(os.Stderr, "captf-env: starting (the first run on a machine builds etcd, kube-apiserver and kube-controller-manager)")
	e, err := env.Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "captf-env: %v\n", err)
		os.Exit(1)
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "captf-env: "+format+"\n", args...)
		_ = e.Stop()
		os.Exit(1)
	}
	for _, script := range setups {
		fmt.Fprintf(os.Stderr, "captf-env: running %s\n", script)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), e.ProcessEnv()...)
		if err := cmd.Run(); err != nil {
			fail("setup %q failed: %v", script, err)
		}
	}
	removeWebhooks := func() {}
	if *manager != "" {
		// The manager serves CAPTF's admission webhooks on a free port with
		// a certificate for 127.0.0.1, and the configuration is installed
		// once it answers; the registry is on loopback, so template image
		// inspection may reach it.
		dir := filepath.Join(e.Dir, "captf-webhook")
		ca, err := admission.Certs(dir)
		if err != nil {
			fail("%v", err)
		}
		port, err := admission.FreePort()
		if err != nil {
			fail("%v", err)
		}
		root, err := tools.RepoRoot()
		if err != nil {
			fail("%v", err)
		}
		_, validating, err := admission.Configs(filepath.Join(root, "config", "webhook", "manifests.yaml"), "captf", port, ca)
		if err != nil {
			fail("%v", err)
		}
		args := append([]string{*manager, fmt.Sprintf("--webhook-port=%d", port), "--webhook-cert-dir=" + dir, "--allow-private-registries"}, managerArgs...)
		p, err := e.StartProcess("manager", args)
		if err != nil {
			fail("%v", err)
		}
		fmt.Printf("manager:    pid %d, log %s\n", p.Pid(), p.LogPath)
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		err = admission.WaitTLS(wctx, port, ca)
		if err == nil {
			removeWebhooks, err = admission.Install(wctx, e.Config, nil, validating)
		}
		wcancel()
		if err != nil {
			fail("CAPTF's webhooks: %v", err)
		}
		fmt.Printf("webhooks:   %s on 127.0.0.1:%d\n", validating[0].Name, port)
	}
	if *envFile != "" {
		// Written whole then renamed: a reader waiting for the file never
		// sees part of it.
		tmp := *envFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strings.Join(e.ProcessEnv(), "\n")+"\n"), 0o644); err != nil {
			fail("failed to write %s: %v", *envFile, err)
		}
		if err := os.Rename(tmp, *envFile); err != nil {
			fail("failed to write %s: %v", *envFile, err)
		}
	}
	fmt.Printf("captf-env: ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("kubeconfig: %s\n", e.KubeconfigPath)
	fmt.Printf("  export KUBECONFIG=%s\n", e.KubeconfigPath)
	if e.Registry != "" {
		fmt.Printf("registry:   %s\n", e.Registry)
	}
	fmt.Printf("data:       %s\n", e.Dir)
	if e.ControlPlane != nil {
		fmt.Printf("logs:       %s/controlplane/logs, %s/logs; pod logs under %s/kubelet/pods\n", e.Dir, e.Dir, e.Dir)
	}
	if total, _, err := e.RSS(); err == nil {
		fmt.Printf("memory:     %d MiB resident\n", total>>20)
	}
	fmt.Println("Press Ctrl-C to stop.")

	<-ctx.Done()
	stop()
	fmt.Fprintln(os.Stderr, "captf-env: stopping")
	removeWebhooks()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "captf-env: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "captf-env: stopped")
}
