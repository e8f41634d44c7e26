package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/cli"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// plugin is kubectl-captf built once for the package, and the pinned
// kubectl that discovers it on PATH.
var plugin struct {
	once    sync.Once
	err     error
	dir     string
	kubectl string
}

// captf runs `kubectl captf <args>` through the pinned kubectl's plugin
// discovery (kubectl-captf on PATH), as the environment's admin, or as
// user (impersonated) when user is not "". It returns stdout and stderr.
func (w *world) captf(ctx context.Context, user string, args ...string) (string, string, error) {
	w.t.Helper()
	return w.kubectl(ctx, user, append([]string{"captf"}, args...)...)
}

// kubectl runs the pinned kubectl with args, with kubectl-captf on PATH,
// as the admin or as user (impersonated).
func (w *world) kubectl(ctx context.Context, user string, args ...string) (string, string, error) {
	w.t.Helper()
	cmd := w.kubectlCommand(ctx, user, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	w.t.Logf("%s: exit %v\n%s%s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	return stdout.String(), stderr.String(), err
}

// kubectlCommand is the pinned kubectl with args, kubectl-captf (built
// once for the package) on PATH and the environment's kubeconfig.
func (w *world) kubectlCommand(ctx context.Context, user string, args ...string) *exec.Cmd {
	w.t.Helper()
	plugin.once.Do(func() {
		if plugin.kubectl, plugin.err = tools.Path("kubectl"); plugin.err != nil {
			return
		}
		plugin.dir = filepath.Join(shared.dir, "build", "plugin")
		if plugin.err = os.MkdirAll(plugin.dir, 0o755); plugin.err != nil {
			return
		}
		plugin.err = tools.Build(context.WithoutCancel(ctx), "./cmd/kubectl-captf", filepath.Join(plugin.dir, "kubectl-captf"))
	})
	if plugin.err != nil {
		w.t.Fatalf("kubectl captf: %v", plugin.err)
	}
	if user != "" {
		args = append(args, "--as", user)
	}
	cmd := exec.CommandContext(ctx, plugin.kubectl, args...)
	cmd.Env = []string{
		"PATH=" + plugin.dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"KUBECONFIG=" + w.e.KubeconfigPath,
		"HOME=" + w.t.TempDir(),
	}
	return cmd
}

// mustCaptf is captf failing the test on a non-zero exit.
func (w *world) mustCaptf(ctx context.Context, user string, args ...string) string {
	w.t.Helper()
	out, stderr, err := w.captf(ctx, user, args...)
	if err != nil {
		w.t.Fatalf("kubectl captf %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// operatorRole binds user, in ns only, to what the plugin needs (book:
// Security Model, the operator's role): read and patch the Terraform*
// objects (and watch them, for status --watch), read Jobs, pods and pod
// logs. No Secrets, nothing cluster-wide.
func (w *world) operatorRole(ctx context.Context, ns, user string) {
	w.t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "captf-operator"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"terraformclusters", "terraformmachines", "terraformmachinepools"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{infrav1.GroupVersion.Group}, Resources: []string{"terraformplans"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "captf-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	w.create(ctx, role, binding)
}

// statusRows runs `kubectl captf status -o json` with args and decodes it.
func (w *world) statusRows(ctx context.Context, user string, args ...string) []cli.Row {
	w.t.Helper()
	out := w.mustCaptf(ctx, user, append([]string{"status", "-o", "json"}, args...)...)
	var doc struct {
		Items []cli.Row `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		w.t.Fatalf("status -o json printed %q: %v", out, err)
	}
	return doc.Items
}

// planShown runs `kubectl captf plan show -o json` and decodes it.
func (w *world) planShown(ctx context.Context, user, ref, ns string) cli.Approval {
	w.t.Helper()
	out := w.mustCaptf(ctx, user, "plan", "show", ref, "-n", ns, "-o", "json")
	var a cli.Approval
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		w.t.Fatalf("plan show -o json printed %q: %v", out, err)
	}
	return a
}
