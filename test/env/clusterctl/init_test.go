package clusterctl_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/certmanager"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/clusterctl"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// On the local environment, where Cluster API runs in-process with its
// CRDs but without clusterctl's inventory, init --infrastructure terraform
// would install Cluster API's providers first; with CAPIInventory recorded,
// it plans cert-manager and CAPTF only, passes its contract checks, and
// installs cert-manager's manifest with its own labels before waiting for
// cert-manager's API (which needs pod networking, so the wait times out).
func TestInitOnTheLocalEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := env.ForTest(t, env.Options{CAPI: true})

	manifest, err := certmanager.ReleaseManifest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterctl.Write(clusterctl.Options{
		Dir:         t.TempDir(),
		Terraform:   clusterctl.Release{Dir: testRelease(t), Version: captfVersion},
		CAPIVersion: capiVersion,
		CertManager: clusterctl.CertManager{Manifest: manifest, Version: certmanager.Version, Timeout: 5 * time.Second},
		Variables:   map[string]string{"CAPTF_TEST_LABEL": "init"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusterctlclient.New(ctx, cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	opts := clusterctlclient.InitOptions{
		Kubeconfig:              clusterctlclient.Kubeconfig{Path: e.KubeconfigPath},
		InfrastructureProviders: []string{clusterctl.ProviderName},
	}

	// Without an inventory, init takes the cluster for a new one and plans
	// Cluster API's providers, whose components the repository lacks.
	if _, err := c.InitImages(ctx, opts); err == nil || !strings.Contains(err.Error(), "core-components.yaml") {
		t.Fatalf("InitImages without an inventory: %v, want the cluster-api components to be looked for", err)
	}

	if err := clusterctl.InstallInventory(ctx, e.KubeconfigPath, clusterctl.CAPIInventory(capiVersion)); err != nil {
		t.Fatal(err)
	}
	images, err := c.InitImages(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"registry.invalid/captf/manager:v0.1.0"}
	for _, comp := range certmanager.Components {
		want = append(want, certmanager.ReleaseImage(comp))
	}
	slices.Sort(want)
	if !slices.Equal(images, want) {
		t.Errorf("init would pull %v, want %v", images, want)
	}

	_, err = c.Init(ctx, opts)
	if err == nil {
		t.Fatal("init succeeded without a reachable cert-manager webhook")
	}
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("init stopped at %v, want the end of its wait for cert-manager", err)
	}
	var dep appsv1.Deployment
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: certmanager.Namespace, Name: "cert-manager-webhook"}, &dep); err != nil {
		t.Fatalf("init did not install cert-manager: %v", err)
	}
	if dep.Labels[clusterctlv1.ClusterctlCoreLabel] != clusterctlv1.ClusterctlCoreLabelCertManagerValue ||
		dep.Annotations[clusterctlv1.CertManagerVersionAnnotation] != certmanager.Version {
		t.Errorf("cert-manager's webhook Deployment has labels %v and annotations %v", dep.Labels, dep.Annotations)
	}
	s := runtime.NewScheme()
	if err := clusterctlv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	inv, err := client.New(e.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	var providers clusterctlv1.ProviderList
	if err := inv.List(ctx, &providers); err != nil {
		t.Fatal(err)
	}
	if len(providers.Items) != 3 {
		t.Errorf("the inventory holds %d providers, want Cluster API's 3", len(providers.Items))
	}
	for _, p := range providers.Items {
		if p.ProviderName == clusterctl.ProviderName {
			t.Errorf("terraform was installed before cert-manager answered")
		}
	}
}
