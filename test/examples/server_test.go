package examples

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// One API server for the whole package: CAPTF's CRDs (config/crd/bases),
// Cluster API's (core, kubeadm bootstrap, kubeadm control plane, from the
// pinned module), and CAPTF's validating webhooks (setup.Webhooks, what
// the manager registers) served in-process on 127.0.0.1 behind
// config/webhook's configuration. No controller runs: every example is a
// dry run, and only namespaces are created for real.

// srv is nil in -short mode.
var srv *server

// fieldManager is the field manager of every dry-run apply.
const fieldManager = "captf-docs-examples"

// exampleNamespace is where fragments of namespaced kinds are placed (the
// book's examples use team-a).
const exampleNamespace = "team-a"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	code, err := runWithAPIServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithAPIServer(m *testing.M) (int, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return 0, err
	}
	sets, err := capi.CRDs()
	if err != nil {
		return 0, err
	}
	paths := []string{filepath.Join(root, "config", "crd", "bases")}
	for _, s := range sets {
		paths = append(paths, s.Path)
	}
	env, cfg, err := envtest.Start(paths...)
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()

	dir, err := os.MkdirTemp("", "captf-examples-webhook-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := serveWebhooks(ctx, cfg, root, dir)
	if err != nil {
		return 0, err
	}
	defer stop()

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return 0, err
	}
	srv = &server{c: c, cfg: cfg, namespaces: map[string]error{}}
	if err := srv.ensureNamespace(ctx, exampleNamespace); err != nil {
		return 0, err
	}
	// The API server calls a webhook only once its configuration informer
	// has seen it: poll until a rule only the webhook holds is enforced.
	if err := srv.waitForWebhooks(ctx, time.Minute); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// serveWebhooks starts a manager that runs nothing but CAPTF's webhooks,
// installs config/webhook's configuration pointed at it and returns a
// function that removes the configuration and stops the manager.
func serveWebhooks(ctx context.Context, cfg *rest.Config, root, dir string) (func(), error) {
	ca, err := admission.Certs(dir)
	if err != nil {
		return nil, err
	}
	port, err := admission.FreePort()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 setup.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}),
		Logger:                 zap.New(zap.WriteTo(io.Discard)),
	})
	if err != nil {
		return nil, err
	}
	w := setup.Wiring{Options: setup.DefaultOptions(), Live: mgr.GetAPIReader()}
	for _, register := range setup.Webhooks {
		if err := register(mgr, w); err != nil {
			return nil, err
		}
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	remove, err := admission.InstallWhenServing(wctx, cfg, mgr.GetWebhookServer(), "CAPTF",
		filepath.Join(root, "config", "webhook", "manifests.yaml"), port, ca)
	if err != nil {
		mcancel()
		return nil, err
	}
	return func() {
		remove()
		mcancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "the webhook manager:", err)
		}
	}, nil
}

// server dry-runs objects on the package's API server.
type server struct {
	c   client.Client
	cfg *rest.Config

	mu sync.Mutex
	// namespaces remembers which namespaces were created (nil) or could
	// not be (the error).
	namespaces map[string]error
	// kinds maps a kind to the group-version-kinds the server serves it
	// under, preferred versions only, read once.
	kinds map[string][]schema.GroupVersionKind
}

// apply dry-runs a server-side apply of obj with strict field validation,
// after creating the namespace it names; the error is the server's.
func (s *server) apply(ctx context.Context, obj map[string]any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	u.SetName(name)
	gvk := u.GroupVersionKind()
	mapping, err := s.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("the test's API server does not serve %s %s (only Kubernetes', CAPTF's and Cluster API's core and kubeadm kinds are installed): %w", apiVersion, kind, err)
		}
		return err
	}
	if mapping.Scope.Name() == "namespace" {
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		if err := s.ensureNamespace(ctx, ns); err != nil {
			return fmt.Errorf("cannot create its namespace %q: %w", ns, err)
		}
		u.SetNamespace(ns)
	} else if ns != "" {
		return fmt.Errorf("%s is cluster-scoped, yet the object names the namespace %q", kind, ns)
	}
	return s.c.Patch(ctx, u, client.RawPatch(types.ApplyPatchType, body),
		client.DryRunAll, client.FieldOwner(fieldManager), client.ForceOwnership, client.FieldValidation("Strict"))
}

// ensureNamespace creates a namespace, once.
func (s *server) ensureNamespace(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err, done := s.namespaces[name]; done {
		return err
	}
	err := s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	s.namespaces[name] = err
	return err
}

// groupPreference orders the groups a fragment's bare kind is looked up
// in: CAPTF's, Cluster API's, then Kubernetes' core group; any other group
// serving the kind must be the only one.
var groupPreference = []string{
	"infrastructure.cluster.x-k8s.io", "cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
	"bootstrap.cluster.x-k8s.io", "",
}

// gvkOf resolves a bare kind, as a fragment marker names it.
func (s *server) gvkOf(kind string) (schema.GroupVersionKind, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(s.cfg)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		lists, err := dc.ServerPreferredResources()
		if err != nil {
			return schema.GroupVersionKind{}, fmt.Errorf("discovery: %w", err)
		}
		s.kinds = map[string][]schema.GroupVersionKind{}
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				return schema.GroupVersionKind{}, err
			}
			for _, r := range l.APIResources {
				if strings.Contains(r.Name, "/") {
					continue
				}
				s.kinds[r.Kind] = append(s.kinds[r.Kind], gv.WithKind(r.Kind))
			}
		}
	}
	gvks := s.kinds[kind]
	for _, g := range groupPreference {
		for _, gvk := range gvks {
			if gvk.Group == g {
				return gvk, nil
			}
		}
	}
	switch len(gvks) {
	case 0:
		return schema.GroupVersionKind{}, fmt.Errorf("the test's API server serves no kind %s", kind)
	case 1:
		return gvks[0], nil
	}
	var names []string
	for _, g := range gvks {
		names = append(names, g.GroupVersion().String())
	}
	sort.Strings(names)
	return schema.GroupVersionKind{}, fmt.Errorf("kind %s is served by several groups (%s)", kind, strings.Join(names, ", "))
}

// fragmentName is the name of every object a fragment is placed in.
const fragmentName = "example"

// base returns a minimal valid object of kind, in the example namespace
// when the kind is namespaced, for a fragment to be placed in.
func (s *server) base(kind string) (map[string]any, error) {
	gvk, err := s.gvkOf(kind)
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if b, ok := bases[kind]; ok {
		v, err := decode([]byte(b))
		if err != nil {
			return nil, fmt.Errorf("the base object of %s: %w", kind, err)
		}
		obj = v.(map[string]any)
	}
	obj["apiVersion"] = gvk.GroupVersion().String()
	obj["kind"] = kind
	md := map[string]any{"name": fragmentName}
	mapping, err := s.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == "namespace" {
		md["namespace"] = exampleNamespace
	}
	obj["metadata"] = md
	return obj, nil
}

// bases are the fields a minimal valid object of a kind needs besides
// apiVersion, kind and metadata; a kind without an entry needs none.
// TestFragmentBasesAreValid has the server accept each.
var bases = map[string]string{
	"TerraformCluster": `
spec:
  source: {image: registry.example/captf/cluster-module:v1}
  identityRef: {name: example}`,
	"TerraformClusterTemplate": `
spec:
  template:
    spec:
      source: {image: registry.example/captf/cluster-module:v1}
      identityRef: {name: example}`,
	"TerraformMachine": `
spec:
  source: {image: registry.example/captf/machine-module:v1}`,
	"TerraformMachineTemplate": `
spec:
  template:
    spec:
      source: {image: registry.example/captf/machine-module:v1}`,
	"TerraformMachinePool": `
spec:
  source: {image: registry.example/captf/pool-module:v1}`,
	"TerraformMachinePoolTemplate": `
spec:
  template:
    spec:
      source: {image: registry.example/captf/pool-module:v1}`,
	"TerraformClusterIdentity": `
spec:
  secretRef: {name: example-credentials, namespace: captf-system}
  allowedNamespaces: {list: [team-a]}`,
	"TerraformPlan": `
spec:
  targetRef: {kind: TerraformMachine, name: example, uid: 00000000-0000-0000-0000-000000000000}
  job: example-apply-a1
  inputsHash: sha256-example
  planHash: sha256-example
  reason: Manual`,
	"Cluster": `
spec:
  paused: false`,
	"Machine": `
spec:
  clusterName: example
  bootstrap: {dataSecretName: example-bootstrap}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: TerraformMachine, name: example}`,
	"MachineDeployment": `
spec:
  clusterName: example
  selector: {matchLabels: {example: "true"}}
  template:
    metadata: {labels: {example: "true"}}
    spec:
      clusterName: example
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfigTemplate, name: example}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: TerraformMachineTemplate, name: example}`,
	"MachinePool": `
spec:
  clusterName: example
  template:
    spec:
      clusterName: example
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfig, name: example}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: TerraformMachinePool, name: example}`,
	"MachineHealthCheck": `
spec:
  clusterName: example
  selector: {matchLabels: {example: "true"}}`,
	"ClusterClass": `
spec:
  infrastructure:
    templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1, kind: TerraformClusterTemplate, name: example}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: example}`,
	"KubeadmControlPlane": `
spec:
  version: v1.33.0
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: TerraformMachineTemplate, name: example}`,
	"KubeadmControlPlaneTemplate": `
spec:
  template:
    spec:
      kubeadmConfigSpec: {format: cloud-config}`,
	"KubeadmConfigTemplate": `
spec:
  template:
    spec: {format: cloud-config}`,
}

// waitForWebhooks polls, up to timeout, until a dry run of an object only
// CAPTF's webhook refuses (a TerraformMachine setting a contract input as
// a variable; the CRD schema allows it) is refused by the webhook.
func (s *server) waitForWebhooks(ctx context.Context, timeout time.Duration) error {
	obj, err := s.base("TerraformMachine")
	if err != nil {
		return err
	}
	if err := place(obj, []string{"spec", "variables"}, map[string]any{"machine_name": "x"}); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := s.apply(ctx, obj)
		if err != nil && strings.Contains(err.Error(), "admission webhook") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CAPTF's webhooks were not called within %s; the last dry run returned %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
