package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlcluster "sigs.k8s.io/cluster-api/cmd/clusterctl/client/cluster"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/yaml"
)

const (
	// ProviderName is CAPTF's name as an infrastructure provider:
	// clusterctl init --infrastructure terraform.
	ProviderName = "terraform"
	// ComponentsFile is the file of a release folder that holds CAPTF's
	// components (CRDs, RBAC, the manager Deployment, webhooks, the
	// cert-manager Certificate and Issuer).
	ComponentsFile = "infrastructure-components.yaml"
	// MetadataFile maps a provider's release series to Cluster API
	// contracts.
	MetadataFile = "metadata.yaml"
	// CertManagerFile is the name clusterctl reads cert-manager's manifest
	// under.
	CertManagerFile = "cert-manager.yaml"
)

// Release is a CAPTF release folder: a clusterctl provider repository
// entry holding ComponentsFile, MetadataFile and the cluster templates
// (cluster-template*.yaml, clusterclass-*.yaml).
type Release struct {
	// Dir is the folder; every regular file in it is published.
	Dir string
	// Version is the release's version (v0.1.0); MetadataFile must map its
	// major.minor to a contract.
	Version string
}

// CertManager is the cert-manager clusterctl installs.
type CertManager struct {
	// Manifest is cert-manager.yaml (see package test/env/certmanager).
	Manifest []byte
	// Version is its version; clusterctl records it on every object it
	// creates and compares it on upgrade.
	Version string
	// Timeout bounds clusterctl's wait for cert-manager's API (0: clusterctl's
	// default, 10 minutes).
	Timeout time.Duration
}

// Options describe the configuration to write.
type Options struct {
	// Dir receives the local repository (Dir/repository), an empty
	// overrides folder (Dir/overrides) and the configuration file
	// (Dir/clusterctl.yaml).
	Dir string
	// Terraform is the CAPTF release clusterctl installs.
	Terraform Release
	// CAPIVersion is the Cluster API version the management cluster runs
	// (the core, kubeadm bootstrap and kubeadm control-plane providers).
	CAPIVersion string
	// CertManager is the cert-manager clusterctl installs.
	CertManager CertManager
	// Variables are written as top-level keys, where clusterctl looks up the
	// ${VARIABLES} of components and templates before the environment.
	Variables map[string]string
}

// Config is a written clusterctl configuration.
type Config struct {
	// Path is the configuration file, for clusterctl's --config or
	// client.New.
	Path string
	// RepositoryDir is the root of the local repository.
	RepositoryDir string
	// TerraformURL and CertManagerURL are the file URLs the configuration
	// gives for CAPTF's components and cert-manager's manifest.
	TerraformURL, CertManagerURL string
}

// capiProvider is one of the Cluster API providers the local environment
// runs in-process.
type capiProvider struct {
	name       string
	typ        clusterctlv1.ProviderType
	components string
	namespace  string
}

// capiProviders are the providers clusterctl init installs by default,
// with the file names and namespaces of Cluster API's releases.
var capiProviders = []capiProvider{
	{clusterctlconfig.ClusterAPIProviderName, clusterctlv1.CoreProviderType, "core-components.yaml", "capi-system"},
	{clusterctlconfig.KubeadmBootstrapProviderName, clusterctlv1.BootstrapProviderType, "bootstrap-components.yaml", "capi-kubeadm-bootstrap-system"},
	{clusterctlconfig.KubeadmControlPlaneProviderName, clusterctlv1.ControlPlaneProviderType, "control-plane-components.yaml", "capi-kubeadm-control-plane-system"},
}

// Write lays out the local repository and writes the configuration file:
//
//	<Dir>/repository/infrastructure-terraform/<version>/   the release folder's files
//	<Dir>/repository/cert-manager/<version>/cert-manager.yaml
//	<Dir>/repository/cluster-api/<capi>/metadata.yaml          and the same for
//	<Dir>/repository/bootstrap-kubeadm/<capi>/metadata.yaml    the kubeadm
//	<Dir>/repository/control-plane-kubeadm/<capi>/metadata.yaml providers
//	<Dir>/overrides/                                          empty
//	<Dir>/clusterctl.yaml
//
// The Cluster API providers get a metadata.yaml (their release series and
// contract) and no components: clusterctl reads their metadata to check
// CAPTF's contract against the core provider's, and installs them only on
// a cluster whose inventory has no core provider (see InstallInventory).
func Write(o Options) (*Config, error) {
	if o.Dir == "" || o.Terraform.Dir == "" || o.Terraform.Version == "" || o.CAPIVersion == "" ||
		len(o.CertManager.Manifest) == 0 || o.CertManager.Version == "" {
		return nil, errors.New("clusterctl: Write needs Dir, the Terraform release, CAPIVersion and the cert-manager manifest and version")
	}
	for _, v := range []string{o.Terraform.Version, o.CAPIVersion, o.CertManager.Version} {
		if _, err := version.ParseSemantic(v); err != nil {
			return nil, fmt.Errorf("clusterctl: version %q: %w", v, err)
		}
	}
	repo, err := filepath.Abs(filepath.Join(o.Dir, "repository"))
	if err != nil {
		return nil, err
	}
	overrides := filepath.Join(filepath.Dir(repo), "overrides")
	if err := os.MkdirAll(overrides, 0o755); err != nil {
		return nil, err
	}

	// CAPTF: the release folder's files, as they are.
	tfLabel := clusterctlv1.ManifestLabel(ProviderName, clusterctlv1.InfrastructureProviderType)
	tfDir := filepath.Join(repo, tfLabel, o.Terraform.Version)
	if err := CopyFiles(o.Terraform.Dir, tfDir); err != nil {
		return nil, fmt.Errorf("clusterctl: publish the release %s: %w", o.Terraform.Dir, err)
	}
	for _, f := range []string{ComponentsFile, MetadataFile} {
		if _, err := os.Stat(filepath.Join(tfDir, f)); err != nil {
			return nil, fmt.Errorf("clusterctl: the release folder %s has no %s", o.Terraform.Dir, f)
		}
	}

	// cert-manager: the manifest under the fake provider name clusterctl
	// gives it, so the path reads {base}/cert-manager/{version}/cert-manager.yaml.
	cmDir := filepath.Join(repo, "cert-manager", o.CertManager.Version)
	if err := writeFile(filepath.Join(cmDir, CertManagerFile), o.CertManager.Manifest); err != nil {
		return nil, err
	}

	// Cluster API: metadata only.
	metadata, err := capiMetadata(o.CAPIVersion)
	if err != nil {
		return nil, err
	}
	type providerEntry struct {
		Name string                    `json:"name"`
		URL  string                    `json:"url"`
		Type clusterctlv1.ProviderType `json:"type"`
	}
	var providers []providerEntry
	for _, p := range capiProviders {
		dir := filepath.Join(repo, clusterctlv1.ManifestLabel(p.name, p.typ), o.CAPIVersion)
		if err := writeFile(filepath.Join(dir, MetadataFile), metadata); err != nil {
			return nil, err
		}
		providers = append(providers, providerEntry{p.name, fileURL(filepath.Join(dir, p.components)), p.typ})
	}
	cfg := &Config{
		Path:           filepath.Join(filepath.Dir(repo), "clusterctl.yaml"),
		RepositoryDir:  repo,
		TerraformURL:   fileURL(filepath.Join(tfDir, ComponentsFile)),
		CertManagerURL: fileURL(filepath.Join(cmDir, CertManagerFile)),
	}
	providers = append(providers, providerEntry{ProviderName, cfg.TerraformURL, clusterctlv1.InfrastructureProviderType})

	doc := map[string]any{}
	for k, v := range o.Variables {
		doc[k] = v
	}
	doc[clusterctlconfig.ProvidersConfigKey] = providers
	certManager := map[string]string{"url": cfg.CertManagerURL, "version": o.CertManager.Version}
	if o.CertManager.Timeout > 0 {
		certManager["timeout"] = o.CertManager.Timeout.String()
	}
	doc[clusterctlconfig.CertManagerConfigKey] = certManager
	// An empty overrides folder keeps a developer's
	// ~/.config/cluster-api/overrides out of the test.
	doc["overridesFolder"] = overrides
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := writeFile(cfg.Path, b); err != nil {
		return nil, err
	}
	return cfg, nil
}

// capiMetadata is the metadata.yaml of a Cluster API release: its series
// implements the contract of the Cluster API types this module builds with.
func capiMetadata(capiVersion string) ([]byte, error) {
	v, err := version.ParseSemantic(capiVersion)
	if err != nil {
		return nil, err
	}
	md := clusterctlv1.Metadata{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterctlv1.GroupVersion.String(), Kind: "Metadata"},
		ReleaseSeries: []clusterctlv1.ReleaseSeries{{
			Major: int32(v.Major()), Minor: int32(v.Minor()), Contract: clusterv1.GroupVersion.Version,
		}},
	}
	return yaml.Marshal(md)
}

// fileURL is the file:// URL of an absolute path, the form clusterctl's
// local repositories take ({basepath}/{provider-label}/{version}/{file}).
func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// CopyFiles copies the regular files of the folder src (not its
// subfolders) into dst, creating it: a release folder published into a
// local repository's folder for its version.
func CopyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dst, e.Name()), b); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// CAPIInventory returns the inventory objects clusterctl init writes for
// Cluster API's core, kubeadm bootstrap and kubeadm control-plane providers
// at capiVersion, in the namespaces of Cluster API's releases.
func CAPIInventory(capiVersion string) []clusterctlv1.Provider {
	var out []clusterctlv1.Provider
	for _, p := range capiProviders {
		label := clusterctlv1.ManifestLabel(p.name, p.typ)
		out = append(out, clusterctlv1.Provider{
			ObjectMeta: metav1.ObjectMeta{Name: label, Namespace: p.namespace, Labels: map[string]string{
				clusterctlv1.ClusterctlLabel: "",
				clusterv1.ProviderNameLabel:  label,
			}},
			ProviderName: p.name,
			Type:         string(p.typ),
			Version:      capiVersion,
		})
	}
	return out
}

// InstallInventory records providers in a cluster's clusterctl inventory
// (kubeconfig is an admin kubeconfig file): it creates the inventory CRD
// when missing, each provider's namespace and its Provider object. With
// CAPIInventory's providers recorded, clusterctl init takes Cluster API as
// installed and installs only cert-manager and the providers it is asked
// for.
func InstallInventory(ctx context.Context, kubeconfig string, providers []clusterctlv1.Provider) error {
	conf, err := clusterctlconfig.New(ctx, "")
	if err != nil {
		return fmt.Errorf("clusterctl configuration: %w", err)
	}
	inv := clusterctlcluster.New(clusterctlcluster.Kubeconfig{Path: kubeconfig}, conf).ProviderInventory()
	if err := inv.EnsureCustomResourceDefinitions(ctx); err != nil {
		return fmt.Errorf("the clusterctl inventory CRD: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	for _, p := range providers {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", p.Namespace, err)
		}
		if err := inv.Create(ctx, p); err != nil {
			return fmt.Errorf("provider %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
