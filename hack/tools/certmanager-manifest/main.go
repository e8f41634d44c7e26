// Command certmanager-manifest renders cert-manager's static install
// manifest (the cert-manager.yaml clusterctl applies) from the Helm chart in
// the pinned cert-manager module, the way cert-manager's release renders it:
// release name and namespace cert-manager, the chart's default values with
// crds.enabled=true, creator=static and startupapicheck.enabled=false,
// Kubernetes 1.29.0 capabilities and no extra API versions; the cert-manager
// Namespace first, then the CustomResourceDefinitions, then every other
// object in Helm's install order. The chart's version and appVersion are set
// to the module's version, as cert-manager's release tool sets them.
//
//	certmanager-manifest -module-dir <dir of github.com/cert-manager/cert-manager@v> -version v1.21.2 > cert-manager.yaml
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
)

const (
	releaseName = "cert-manager"
	namespace   = "cert-manager"
	kubeVersion = "1.29.0"
)

// releaseValues are the --set values of cert-manager's release render.
var releaseValues = []string{"crds.enabled=true", "creator=static", "startupapicheck.enabled=false"}

func main() {
	moduleDir := flag.String("module-dir", "", "directory of the github.com/cert-manager/cert-manager module")
	version := flag.String("version", "", "cert-manager version, set as the chart's version and appVersion")
	flag.Parse()
	if *moduleDir == "" || *version == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: certmanager-manifest -module-dir DIR -version VERSION")
		os.Exit(2)
	}
	out, err := render(*moduleDir, *version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "certmanager-manifest: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

func render(moduleDir, version string) ([]byte, error) {
	chrt, err := loader.LoadDir(filepath.Join(moduleDir, "deploy", "charts", "cert-manager"))
	if err != nil {
		return nil, fmt.Errorf("load the chart: %w", err)
	}
	chrt.Metadata.Version = version
	chrt.Metadata.AppVersion = version

	values := map[string]any{}
	for _, v := range releaseValues {
		if err := strvals.ParseInto(v, values); err != nil {
			return nil, err
		}
	}
	caps, err := capabilities()
	if err != nil {
		return nil, err
	}
	top, err := chartutil.ToRenderValues(chrt, values, common.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("compose the values: %w", err)
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, fmt.Errorf("render the chart: %w", err)
	}
	// NOTES.txt is for people, not for the API server.
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sort the manifests: %w", err)
	}
	if len(hooks) != 0 {
		return nil, fmt.Errorf("the release render has %d hooks; a static manifest cannot run them", len(hooks))
	}

	ns, err := os.ReadFile(filepath.Join(moduleDir, "deploy", "manifests", "namespace.yaml"))
	if err != nil {
		return nil, err
	}
	var crds, others []string
	for _, m := range manifests {
		if m.Head != nil && m.Head.Kind == "CustomResourceDefinition" {
			crds = append(crds, m.Content)
		} else {
			others = append(others, m.Content)
		}
	}
	var b bytes.Buffer
	b.WriteString(strings.TrimSpace(string(ns)) + "\n")
	for _, doc := range append(crds, others...) {
		b.WriteString("---\n")
		b.WriteString(strings.TrimSpace(doc) + "\n")
	}
	return b.Bytes(), nil
}

// capabilities are those of `helm template --kube-version 1.29.0
// --api-versions ""`: the chart's kubeVersion constraint is checked against
// them and its Capabilities lookups see only the built-in API versions.
func capabilities() (*common.Capabilities, error) {
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return caps, nil
}
