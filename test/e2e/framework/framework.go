// Package framework is what CAPTF's end-to-end scenarios and the Quick Start
// share: building and pushing the runner and no-op module images to the
// local environment's registry, rendering the shipped clusterctl templates,
// installing the runner's ClusterRole, and running the real manager
// (internal/setup) in-process against the environment.
package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/images"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// Images are the references of the images a scenario runs.
type Images struct {
	Runner, Cluster, Machine, MachinePool string
}

// Module returns the no-op image of a role.
func (i Images) Module(role contract.Role) string {
	switch role {
	case contract.RoleCluster:
		return i.Cluster
	case contract.RoleMachine:
		return i.Machine
	}
	return i.MachinePool
}

// BuildRunner builds the static runner binary into dir.
func BuildRunner(dir string) (string, error) {
	out := filepath.Join(dir, "runner")
	if err := tools.Build(context.Background(), "./cmd/runner", out, "CGO_ENABLED=0"); err != nil {
		return "", err
	}
	return out, nil
}

// PushImages builds the runner image (the static /runner the Jobs' init
// container copies) and the three no-op module images with the pinned
// OpenTofu, and pushes them to the environment's registry. With
// env.Options.Separate they are built and pushed by `captf-env
// push-images`, outside the calling process.
func PushImages(ctx context.Context, root string, e *env.Env, runnerBin string) (Images, error) {
	if e.EnvBinary != "" {
		return pushFromChild(ctx, root, e, runnerBin, tools.OpenTofu)
	}
	runnerImg, err := images.Runner(runnerBin)
	if err != nil {
		return Images{}, err
	}
	runner, err := e.PushImage(ctx, images.RunnerRepo, runnerImg)
	if err != nil {
		return Images{}, err
	}
	out, err := PushModuleImages(ctx, root, e, tools.OpenTofu)
	out.Runner = runner
	return out, err
}

// PushModuleImages builds the three no-op module images with the pinned
// runtime rt and pushes them as captf/noop-<role>:v0.1.0-<rt.Tag>, the
// Quick Start's tags; Runner is left empty. With env.Options.Separate they
// are built and pushed by `captf-env push-images`.
func PushModuleImages(ctx context.Context, root string, e *env.Env, rt tools.Runtime) (Images, error) {
	if e.EnvBinary != "" {
		return pushFromChild(ctx, root, e, "", rt)
	}
	var out Images
	for _, role := range contract.Roles() {
		img, err := images.Module(root, role, rt)
		if err != nil {
			return Images{}, err
		}
		repo := images.ModuleRepo(role, rt)
		if _, err := e.PushImage(ctx, repo, img); err != nil {
			return Images{}, err
		}
		// By tag: the tag is the module version.
		*out.ref(role) = e.ImageRef(repo)
	}
	return out, nil
}

func (i *Images) ref(role contract.Role) *string {
	switch role {
	case contract.RoleCluster:
		return &i.Cluster
	case contract.RoleMachine:
		return &i.Machine
	}
	return &i.MachinePool
}

// pushFromChild runs `captf-env push-images` of the environment (a process
// built without -race) and reads the references it prints.
func pushFromChild(ctx context.Context, root string, e *env.Env, runnerBin string, rt tools.Runtime) (Images, error) {
	args := []string{"push-images", "-registry", e.Registry, "-root", root, "-runtime", rt.Tag}
	if runnerBin != "" {
		args = append(args, "-runner", runnerBin)
	}
	cmd := exec.CommandContext(ctx, e.EnvBinary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return Images{}, fmt.Errorf("captf-env push-images: %w\n%s", err, stderr.String())
	}
	var out Images
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		name, ref, ok := strings.Cut(line, " ")
		if !ok {
			return Images{}, fmt.Errorf("captf-env push-images: unexpected output line %q", line)
		}
		if name == "runner" {
			out.Runner = ref
			continue
		}
		role, err := contract.ParseRole(name)
		if err != nil {
			return Images{}, fmt.Errorf("captf-env push-images: unexpected output line %q", line)
		}
		*out.ref(role) = ref
	}
	if out.Cluster == "" || out.Machine == "" || out.MachinePool == "" || (runnerBin != "" && out.Runner == "") {
		return Images{}, fmt.Errorf("captf-env push-images: missing references in its output %q", stdout)
	}
	return out, nil
}

// RenderedCRDs renders config/crd (the CRDs with their Cluster API contract
// labels) with kustomize into a file under dir.
func RenderedCRDs(root, dir string) (string, error) {
	k, err := tools.Path("kustomize")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(k, "build", filepath.Join(root, "config", "crd")).Output()
	if err != nil {
		return "", fmt.Errorf("kustomize build config/crd: %w", err)
	}
	f := filepath.Join(dir, "captf-crds.yaml")
	return f, os.WriteFile(f, out, 0o600)
}

// Template renders a shipped clusterctl template (templates/<name>) with
// vars, as clusterctl generate would.
func Template(root, name string, vars map[string]string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(root, "templates", name))
	if err != nil {
		return nil, err
	}
	out, err := yamlprocessor.NewSimpleProcessor().Process(raw, func(k string) (string, error) {
		if v, ok := vars[k]; ok {
			return v, nil
		}
		return "", errors.New("not set")
	})
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return Decode(out)
}

// Decode reads every object of a multi-document YAML.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// Apply creates each object, leaving alone those that exist.
func Apply(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// RunnerClusterRole installs the static captf-runner ClusterRole from
// config/rbac, as the provider's manifests do.
func RunnerClusterRole(ctx context.Context, root string, c client.Client) error {
	b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "runner_role.yaml"))
	if err != nil {
		return err
	}
	objs, err := Decode(b)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := Apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// ManagerOptions are the manager settings a scenario runs with: the flag
// defaults, no diagnostics or health servers, the webhooks served (see
// RunObservedManager), the pushed runner image.
func ManagerOptions(runnerImage string) setup.Options {
	o := setup.DefaultOptions()
	o.RunnerImage = runnerImage
	o.DiagnosticsAddress = "0"
	o.HealthAddr = "0"
	o.SkipControllerNameValidation = true
	o.InsecureRegistries = true
	// The local environment's registry is on loopback.
	o.AllowPrivateRegistries = true
	return o
}

// RunManager runs CAPTF's manager (internal/setup) until ctx ends.
func RunManager(ctx context.Context, e *env.Env, o setup.Options) error {
	return RunCountedManager(ctx, e, o, nil)
}

// Writes counts the API write requests (every verb but get, list and
// watch) a manager makes, and keeps the method and path of each.
type Writes struct {
	mu  sync.Mutex
	all []string
}

// Count returns the writes so far.
func (w *Writes) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(len(w.all))
}

// Since returns the method and path of the writes after the first n (at
// most the latest 100).
func (w *Writes) Since(n int64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	from := max(min(int(n), len(w.all)), len(w.all)-100)
	return append([]string(nil), w.all[from:]...)
}

// In returns the method and path of every write so far to an object in
// namespace ns (events included).
func (w *Writes) In(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, r := range w.all {
		if strings.Contains(r, "/namespaces/"+ns+"/") {
			out = append(out, r)
		}
	}
	return out
}

func (w *Writes) add(r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, r.Method+" "+r.URL.Path)
}

type countingTransport struct {
	next   http.RoundTripper
	writes *Writes
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		t.writes.add(r)
	}
	return t.next.RoundTrip(r)
}

// RunCountedManager runs the manager like RunManager and counts its API
// writes in w (nil counts nothing).
func RunCountedManager(ctx context.Context, e *env.Env, o setup.Options, w *Writes) error {
	return RunObservedManager(ctx, e, o, Observe{Writes: w})
}

// Observe is what a scenario does to the API connection of a manager it
// runs.
type Observe struct {
	// Writes, when set, counts the manager's API writes.
	Writes *Writes
	// Wrap, when set, wraps the manager's transport (see LaggingWatch).
	Wrap func(http.RoundTripper) http.RoundTripper
	// Config, when set, is whom the manager authenticates as (see
	// ManagerIdentity); default the environment's admin.
	Config *rest.Config
}

// RunObservedManager runs the manager like RunManager, its API connection
// observed as obs says.
//
// Unless o.WebhookPort is 0, the manager serves CAPTF's admission webhooks
// as in a real installation: on 127.0.0.1 with a CA and serving certificate
// generated under the environment's folder, and, once its webhook server
// answers, captf-validating-webhook-configuration (config/webhook) is
// installed pointing at it, so every write to a Terraform* object goes
// through admission. The configuration is removed when ctx ends. Only one
// manager of an environment serves the webhooks: others set WebhookPort 0.
func RunObservedManager(ctx context.Context, e *env.Env, o setup.Options, obs Observe) error {
	cfg := rest.CopyConfig(e.Config)
	if obs.Config != nil {
		cfg = rest.CopyConfig(obs.Config)
	}
	if obs.Wrap != nil {
		cfg.Wrap(obs.Wrap)
	}
	if w := obs.Writes; w != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, writes: w} })
	}
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	if o.WebhookPort != 0 {
		var err error
		if validating, err = webhookServing(e, &o); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mgr, err := setup.New(ctx, cfg, o)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if validating == nil {
		return <-done
	}
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	if err := admission.WaitServer(wctx, mgr.GetWebhookServer(), "CAPTF"); err != nil {
		cancel()
		return errors.Join(err, <-done)
	}
	remove, err := admission.Install(wctx, e.Config, nil, validating)
	if err != nil {
		cancel()
		return errors.Join(err, <-done)
	}
	select {
	case err = <-done:
		remove()
		return err
	case <-ctx.Done():
		remove()
		return <-done
	}
}

// WebhookConfiguration is the validating webhook configuration
// config/webhook installs.
const WebhookConfiguration = "captf-validating-webhook-configuration"

// webhookServing points o's webhook server at 127.0.0.1 on a free port with
// a generated certificate, and returns config/webhook's configuration
// rewritten to call it (url clientConfig, the CA as caBundle).
func webhookServing(e *env.Env, o *setup.Options) ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return nil, err
	}
	port, err := admission.FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.Dir, "captf-webhook")
	ca, err := admission.Certs(dir)
	if err != nil {
		return nil, err
	}
	_, validating, err := admission.Configs(filepath.Join(root, "config", "webhook", "manifests.yaml"), "captf", port, ca)
	if err != nil {
		return nil, fmt.Errorf("CAPTF webhooks: %w", err)
	}
	for _, c := range validating {
		if c.Name != WebhookConfiguration {
			return nil, fmt.Errorf("CAPTF webhooks: config/webhook names %s, want %s", c.Name, WebhookConfiguration)
		}
	}
	o.WebhookHost, o.WebhookPort, o.WebhookCertDir = "127.0.0.1", port, dir
	o.WebhookCertName, o.WebhookKeyName = "tls.crt", "tls.key"
	return validating, nil
}

// WaitForWebhooks waits until a manager run by RunObservedManager has
// installed CAPTF's webhook configuration.
func WaitForWebhooks(ctx context.Context, c client.Client, timeout time.Duration) error {
	detail, ok := WaitFor(ctx, timeout, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Name: WebhookConfiguration}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if !ok {
		return fmt.Errorf("%s was not installed: %s", WebhookConfiguration, detail)
	}
	return nil
}

// WaitFor polls cond every interval until it holds, ctx ends or timeout
// passes; it returns the last detail cond gave.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) (string, bool) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return detail, true
		}
		last = detail
		if time.Now().After(deadline) || ctx.Err() != nil {
			return last, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}
