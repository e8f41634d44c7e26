// Package envtest starts a real kube-apiserver and etcd, built from source at
// the versions hack/tools pins, through controller-runtime's envtest. It is
// the lightest real API server a CAPTF test can get: no controller-manager,
// so no Job controller and no garbage collection (test/env has those).
package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// Start starts an API server with the CRDs found in crdPaths (files or
// directories) installed. Call Stop on the returned environment when done.
func Start(crdPaths ...string) (*envtest.Environment, *rest.Config, error) {
	assets, err := os.MkdirTemp("", "captf-envtest-assets-")
	if err != nil {
		return nil, nil, err
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		p, err := tools.Path(bin)
		if err != nil {
			return nil, nil, err
		}
		if err := os.Symlink(p, filepath.Join(assets, bin)); err != nil {
			return nil, nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		// A busy machine can take a while to start the control plane.
		ControlPlaneStartTimeout: time.Minute,
	}
	// Kubernetes 1.37 refuses a loopback advertise address unless the
	// endpoint reconciler is off.
	api := env.ControlPlane.GetAPIServer()
	api.Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")
	cfg, err := env.Start()
	if err != nil {
		// A failed CRD install leaves etcd and the API server running.
		_ = env.Stop()
		return nil, nil, fmt.Errorf("failed to start the API server: %w", err)
	}
	return env, cfg, nil
}

// AdminKubeconfig writes a kubeconfig for an admin (system:masters) user of
// env to dir/kubeconfig, for tools that read one (OpenTofu's kubernetes
// backend, the runner), and returns its path.
func AdminKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "captf-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
