package clusterctl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/repository"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/clusterctl"
)

const (
	capiVersion  = "v1.14.2"
	captfVersion = "v0.1.0"
	cmVersion    = "v1.21.2"
)

// testRelease writes a small CAPTF-like release folder: components with a
// Namespace, one CRD and a manager Deployment, metadata mapping v0.1 to the
// v1beta2 contract, and a cluster template.
func testRelease(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		clusterctl.ComponentsFile: `apiVersion: v1
kind: Namespace
metadata:
  name: captf-system
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: terraformclusters.infrastructure.cluster.x-k8s.io
  labels:
    cluster.x-k8s.io/v1beta2: v1alpha1
spec:
  group: infrastructure.cluster.x-k8s.io
  names:
    kind: TerraformCluster
    listKind: TerraformClusterList
    plural: terraformclusters
    singular: terraformcluster
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: captf-controller-manager
  namespace: captf-system
spec:
  selector:
    matchLabels:
      control-plane: controller-manager
  template:
    metadata:
      labels:
        control-plane: controller-manager
    spec:
      containers:
      - name: manager
        image: registry.invalid/captf/manager:v0.1.0
        args:
        - --label=${CAPTF_TEST_LABEL}
`,
		clusterctl.MetadataFile: `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- major: 0
  minor: 1
  contract: v1beta2
`,
		"cluster-template.yaml": "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: ${CLUSTER_NAME}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const testCertManager = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cert-manager\n"

// What Write lays out is read back by clusterctl's own configuration and
// local-repository code: the file URLs resolve to CAPTF's components,
// metadata and templates, to cert-manager's manifest, and to Cluster API
// metadata that declares the v1beta2 contract.
func TestWriteConfigReadByClusterctl(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := clusterctl.Write(clusterctl.Options{
		Dir:         dir,
		Terraform:   clusterctl.Release{Dir: testRelease(t), Version: captfVersion},
		CAPIVersion: capiVersion,
		CertManager: clusterctl.CertManager{Manifest: []byte(testCertManager), Version: cmVersion, Timeout: 90 * time.Second},
		Variables:   map[string]string{"CAPTF_TEST_LABEL": "from-config"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.Join(cfg.RepositoryDir, "infrastructure-terraform", captfVersion, "infrastructure-components.yaml"); cfg.TerraformURL != want {
		t.Errorf("TerraformURL %s, want %s", cfg.TerraformURL, want)
	}

	conf, err := clusterctlconfig.New(ctx, cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := conf.Providers().Get(clusterctl.ProviderName, clusterctlv1.InfrastructureProviderType)
	if err != nil {
		t.Fatal(err)
	}
	if tf.URL() != cfg.TerraformURL {
		t.Errorf("clusterctl reads terraform's URL as %s", tf.URL())
	}
	cm, err := conf.CertManager().Get()
	if err != nil {
		t.Fatal(err)
	}
	if cm.URL() != cfg.CertManagerURL || cm.Version() != cmVersion || cm.Timeout() != "1m30s" {
		t.Errorf("clusterctl reads cert-manager as url %s version %s timeout %s", cm.URL(), cm.Version(), cm.Timeout())
	}
	if v, err := conf.Variables().Get("CAPTF_TEST_LABEL"); err != nil || v != "from-config" {
		t.Errorf("variable CAPTF_TEST_LABEL = %q, %v", v, err)
	}

	// CAPTF's repository: versions, metadata, components (with the
	// variable substituted), templates.
	repo, err := repository.New(ctx, tf, conf)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := repo.GetVersions(ctx)
	if err != nil || len(versions) != 1 || versions[0] != captfVersion {
		t.Errorf("versions %v, %v", versions, err)
	}
	md, err := repo.Metadata(captfVersion).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := md.GetReleaseSeriesForContract("v1beta2"); s == nil || s.Major != 0 || s.Minor != 1 {
		t.Errorf("metadata release series %+v", md.ReleaseSeries)
	}
	comps, err := repo.Components().Get(ctx, repository.ComponentsOptions{Version: captfVersion})
	if err != nil {
		t.Fatal(err)
	}
	if comps.TargetNamespace() != "captf-system" || len(comps.Images()) != 1 || comps.Images()[0] != "registry.invalid/captf/manager:v0.1.0" {
		t.Errorf("components: namespace %s, images %v", comps.TargetNamespace(), comps.Images())
	}
	if y, err := comps.Yaml(); err != nil || !strings.Contains(string(y), "--label=from-config") {
		t.Errorf("the components' variable was not taken from the configuration: %v", err)
	}
	tpl, err := repo.Templates(captfVersion).Get(ctx, "", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	if vars := tpl.Variables(); len(vars) != 1 || vars[0] != "CLUSTER_NAME" {
		t.Errorf("template variables %v", vars)
	}

	// cert-manager: read through the same fake provider clusterctl makes.
	cmRepo, err := repository.New(ctx, clusterctlconfig.NewProvider("cert-manager", cm.URL(), ""), conf)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cmRepo.Components().Raw(ctx, repository.ComponentsOptions{Version: cm.Version()})
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != testCertManager {
		t.Errorf("cert-manager manifest read back as %q", raw)
	}

	// Cluster API: metadata with the contract of this module's types.
	for _, p := range []struct {
		name string
		typ  clusterctlv1.ProviderType
		file string
	}{
		{"cluster-api", clusterctlv1.CoreProviderType, "core-components.yaml"},
		{"kubeadm", clusterctlv1.BootstrapProviderType, "bootstrap-components.yaml"},
		{"kubeadm", clusterctlv1.ControlPlaneProviderType, "control-plane-components.yaml"},
	} {
		prov, err := conf.Providers().Get(p.name, p.typ)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(prov.URL(), "file://"+cfg.RepositoryDir+"/") || !strings.HasSuffix(prov.URL(), "/"+capiVersion+"/"+p.file) {
			t.Errorf("%s %s URL %s", p.typ, p.name, prov.URL())
		}
		r, err := repository.New(ctx, prov, conf)
		if err != nil {
			t.Fatal(err)
		}
		md, err := r.Metadata(capiVersion).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := md.GetReleaseSeriesForContract("v1beta2"); s == nil || s.Major != 1 || s.Minor != 14 {
			t.Errorf("%s %s metadata %+v", p.typ, p.name, md.ReleaseSeries)
		}
	}
}

// A release folder without components is refused.
func TestWriteNeedsComponents(t *testing.T) {
	rel := testRelease(t)
	if err := os.Remove(filepath.Join(rel, clusterctl.ComponentsFile)); err != nil {
		t.Fatal(err)
	}
	_, err := clusterctl.Write(clusterctl.Options{
		Dir: t.TempDir(), Terraform: clusterctl.Release{Dir: rel, Version: captfVersion}, CAPIVersion: capiVersion,
		CertManager: clusterctl.CertManager{Manifest: []byte(testCertManager), Version: cmVersion},
	})
	if err == nil || !strings.Contains(err.Error(), clusterctl.ComponentsFile) {
		t.Fatalf("Write accepted a release without components: %v", err)
	}
}

func TestCAPIInventory(t *testing.T) {
	got := map[string]string{}
	for _, p := range clusterctl.CAPIInventory(capiVersion) {
		if p.Version != capiVersion || p.Labels[clusterctlv1.ClusterctlLabel] != "" || p.Labels["cluster.x-k8s.io/provider"] != p.Name {
			t.Errorf("provider %+v", p)
		}
		got[p.Type+"/"+p.ProviderName] = p.Namespace + "/" + p.Name
	}
	want := map[string]string{
		"CoreProvider/cluster-api":     "capi-system/cluster-api",
		"BootstrapProvider/kubeadm":    "capi-kubeadm-bootstrap-system/bootstrap-kubeadm",
		"ControlPlaneProvider/kubeadm": "capi-kubeadm-control-plane-system/control-plane-kubeadm",
	}
	if len(got) != len(want) {
		t.Fatalf("inventory %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s is %s, want %s", k, got[k], v)
		}
	}
}
