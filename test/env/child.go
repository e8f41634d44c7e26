package env

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/controlplane"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// childStopGrace is how long the child of Options.Separate gets after
// SIGTERM to stop its pods and managers before it is killed.
const childStopGrace = 60 * time.Second

// childBuildTimeout bounds the build of captf-env for Options.Separate.
const childBuildTimeout = 30 * time.Minute

// attach loads the admin kubeconfig of a running control plane and the API
// server's address and port.
func attach(kubeconfig string) (*rest.Config, string, int, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", 0, fmt.Errorf("env: failed to load the kubeconfig %s: %w", kubeconfig, err)
	}
	// A kubeconfig carries no rate limits: without these, client-go's
	// 5 requests per second would hold the kubelet's pod bindings and
	// status writes back by seconds, unlike the in-process environment.
	cfg.QPS, cfg.Burst = controlplane.ClientQPS, controlplane.ClientBurst
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, "", 0, fmt.Errorf("env: the kubeconfig %s names an invalid server %q: %w", kubeconfig, cfg.Host, err)
	}
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, "", 0, fmt.Errorf("env: the kubeconfig %s names a server without a port: %q", kubeconfig, cfg.Host)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, "", 0, fmt.Errorf("env: the kubeconfig %s names a server with an invalid port: %q", kubeconfig, cfg.Host)
	}
	return cfg, host, port, nil
}

// BuildEnvBinary builds test/env/cmd/captf-env without -race
// (tools.Build: a clone in another folder and the other test binaries reuse
// the one link) into dir and returns its path (Options.EnvBinary).
func BuildEnvBinary(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("env: %w", err)
	}
	bin := filepath.Join(dir, "captf-env")
	if err := tools.Build(ctx, "./test/env/cmd/captf-env", bin); err != nil {
		return "", fmt.Errorf("env: %w", err)
	}
	return bin, nil
}

// startChild builds captf-env and runs the registry, Cluster API and the
// kubelet in it against the control plane, and waits until it writes its
// env-file (its last step once everything is up).
func (e *Env) startChild(ctx context.Context) error {
	bin := e.opts.EnvBinary
	if bin == "" {
		// The first build on a machine compiles Cluster API and the
		// Kubernetes libraries without -race: it gets its own bound, so
		// that ctx's end does not kill it half-way.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), childBuildTimeout)
		var err error
		bin, err = BuildEnvBinary(bctx, filepath.Join(e.Dir, "bin"))
		cancel()
		if err != nil {
			return err
		}
	}
	e.EnvBinary = bin
	envFile := filepath.Join(e.Dir, "captf-env.env")
	if err := os.Remove(envFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("env: %w", err)
	}
	args := []string{"-control-plane-kubeconfig", e.KubeconfigPath, "-dir", e.Dir, "-env-file", envFile}
	for _, f := range []struct {
		off  bool
		flag string
	}{
		{!e.opts.CAPI, "-no-capi"}, {e.opts.NoCAPIWebhooks, "-no-capi-webhooks"},
		{!e.opts.Kubelet, "-no-kubelet"}, {!e.opts.Registry, "-no-registry"}, {e.opts.PodNetwork, "-pod-network"},
		{e.opts.Logger.GetSink() != nil, "-v"},
	} {
		if f.off {
			args = append(args, f.flag)
		}
	}
	for _, n := range e.opts.ExtraNodes {
		b, err := json.Marshal(n)
		if err != nil {
			return fmt.Errorf("env: extra Node %q: %w", n.Name, err)
		}
		args = append(args, "-extra-node", string(b))
	}
	p, err := controlplane.StartProcess("captf-env", bin, args, filepath.Join(e.Dir, "logs"))
	if err != nil {
		return fmt.Errorf("env: %w", err)
	}
	e.child = p
	for {
		if b, err := os.ReadFile(envFile); err == nil {
			vars := parseEnvFile(string(b))
			e.Registry = vars["CAPTF_ENV_REGISTRY"]
			if e.opts.Registry && e.Registry == "" {
				return fmt.Errorf("env: captf-env named no registry in %s", envFile)
			}
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("env: %w", p.ExitError())
		case <-ctx.Done():
			return fmt.Errorf("env: captf-env was not ready: %w; last log lines:\n%s", ctx.Err(), p.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parseEnvFile reads NAME=value lines.
func parseEnvFile(s string) map[string]string {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// stopChild sends the child SIGTERM, waits for it to stop its pods and
// managers, and reports how it ended.
func (e *Env) stopChild() error {
	if err := e.child.Stop(childStopGrace); err != nil {
		return fmt.Errorf("env: %w", err)
	}
	if err := e.child.Err(); err != nil {
		return fmt.Errorf("env: %w", e.child.ExitError())
	}
	return nil
}

// childLogs reads a container's log from the child kubelet's folder: the
// pod's folder by its UID while the pod exists, else the latest folder of
// that namespace and name.
func (e *Env) childLogs(namespace, pod, container string) (string, error) {
	kdir := filepath.Join(e.Dir, "kubelet")
	var podDir string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := e.Clientset.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	switch {
	case err == nil:
		podDir = kubelet.PodDir(kdir, namespace, pod, string(p.UID))
	case apierrors.IsNotFound(err):
		podDir = latestPodDir(kdir, namespace, pod)
	default:
		return "", fmt.Errorf("failed to read log of %s/%s container %s: %w", namespace, pod, container, err)
	}
	if podDir == "" {
		return "", fmt.Errorf("pod %s/%s was not run by this kubelet", namespace, pod)
	}
	b, err := os.ReadFile(kubelet.ContainerLogPath(podDir, container))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(podDir); serr != nil {
			return "", fmt.Errorf("pod %s/%s was not run by this kubelet", namespace, pod)
		}
	}
	if err != nil {
		return "", fmt.Errorf("failed to read log of %s/%s container %s: %w", namespace, pod, container, err)
	}
	return string(b), nil
}

// latestPodDir returns the most recently created folder of a pod of that
// namespace and name under the kubelet's folder ("" when there is none).
func latestPodDir(kdir, namespace, pod string) string {
	matches, _ := filepath.Glob(kubelet.PodDir(kdir, namespace, pod, "*"))
	var latest string
	var latestTime time.Time
	for _, m := range matches {
		fi, err := os.Stat(filepath.Join(m, "logs"))
		if err != nil {
			continue
		}
		if latest == "" || fi.ModTime().After(latestTime) {
			latest, latestTime = m, fi.ModTime()
		}
	}
	return latest
}
