// Command captf-env runs CAPTF's local environment until interrupted: etcd,
// kube-apiserver and kube-controller-manager on 127.0.0.1, Cluster API's
// controllers, a loopback OCI registry, the process kubelet and, when asked,
// the CAPTF manager. Missing third-party binaries are built first (once per
// machine). It prints the kubeconfig path and stops everything on SIGINT or
// SIGTERM. It must run as root (the kubelet uses mount namespaces and
// chroot).
//
//	go run ./test/env/cmd/captf-env [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var crds, managerArgs list
	dir := flag.String("dir", "", "data folder (default: a new temporary folder, removed on exit unless -keep)")
	keep := flag.Bool("keep", false, "keep the data folder on exit")
	noCAPI := flag.Bool("no-capi", false, "do not run Cluster API's controllers")
	noKubelet := flag.Bool("no-kubelet", false, "do not run the process kubelet")
	noRegistry := flag.Bool("no-registry", false, "do not serve the loopback registry")
	manager := flag.String("manager", "", "CAPTF manager binary to run against the environment (KUBECONFIG is set for it)")
	verbose := flag.Bool("v", false, "log the in-process components (Cluster API, kubelet) to stderr")
	flag.Var(&crds, "crds", "extra CRD file or folder to install, e.g. config/crd/bases (repeatable)")
	flag.Var(&managerArgs, "manager-arg", "argument for the -manager binary (repeatable)")
	flag.Parse()

	logger := logr.Discard()
	if *verbose {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(logger)

	opts := env.Options{
		ControllerManager: true,
		CAPI:              !*noCAPI,
		Kubelet:           !*noKubelet,
		Registry:          !*noRegistry,
		CRDPaths:          crds,
		Dir:               *dir,
		KeepDir:           *keep,
		Logger:            logger,
	}
	if *manager != "" {
		opts.ManagerCommand = append([]string{*manager}, managerArgs...)
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
	fmt.Printf("captf-env: ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("kubeconfig: %s\n", e.KubeconfigPath)
	fmt.Printf("  export KUBECONFIG=%s\n", e.KubeconfigPath)
	if e.Registry != "" {
		fmt.Printf("registry:   %s\n", e.Registry)
	}
	fmt.Printf("data:       %s\n", e.Dir)
	fmt.Printf("logs:       %s/controlplane/logs, %s/logs; pod logs under %s/kubelet/pods\n", e.Dir, e.Dir, e.Dir)
	if total, _, err := e.RSS(); err == nil {
		fmt.Printf("memory:     %d MiB resident\n", total>>20)
	}
	fmt.Println("Press Ctrl-C to stop.")

	<-ctx.Done()
	stop()
	fmt.Fprintln(os.Stderr, "captf-env: stopping")
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "captf-env: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "captf-env: stopped")
}
