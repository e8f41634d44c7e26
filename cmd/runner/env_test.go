package main_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
)

const (
	credSentinel      = "SENTINEL-CRED-7f3a9c"
	bootstrapSentinel = "SENTINEL-BOOT-51e2d8"
	varSentinel       = "SENTINEL-VAR-c0ffee"
)

// TestLeakedEnvironmentHasNoEffect: TF_VAR_*, TF_CLI_ARGS*, TF_LOG,
// TF_WORKSPACE and KUBE_* values in the container's environment never reach
// the runtime (Runtime Environment, "Environment set and dropped"), and the
// dropped names are logged without their values.
func TestLeakedEnvironmentHasNoEffect(t *testing.T) {
	f := newFixture(t, contract.RoleCluster)
	f.leakRoot = true
	f.render(`{}`)
	env := append(f.baseEnv(),
		"TF_VAR_probe=leaked-tf-var-value",
		"TF_CLI_ARGS=-no-such-flag-leaked",
		"TF_CLI_ARGS_apply=-var=probe=leaked-cli-args-value",
		"TF_LOG=TRACE",
		"TF_WORKSPACE=leakedworkspace",
		"TF_CLI_CONFIG_FILE=/nonexistent/leaked.tfrc",
		"TF_DATA_DIR=/nonexistent/leaked-data-dir",
		"KUBE_HOST=https://127.0.0.1:1",
		"KUBE_CONFIG_PATH=/nonexistent/leaked-kubeconfig",
		"KUBE_TOKEN=leaked-kube-token",
	)
	out := f.runEnv(env, "apply")
	f.mustSucceed(out, "init,validate,apply")

	if got := f.attribute(f.stateDoc(), "probe", "input"); jsonString(t, got) != `{"type":"string","value":"unset"}` && jsonString(t, got) != `{"value":"unset","type":"string"}` {
		t.Errorf("probe = %s, want the root's default: a leaked TF_VAR_ or TF_CLI_ARGS_ reached the runtime", jsonString(t, got))
	}
	var secrets corev1.SecretList
	if err := f.api.client.List(t.Context(), &secrets, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.Contains(s.Name, "leakedworkspace") {
			t.Errorf("state went to workspace from TF_WORKSPACE: %s", s.Name)
		}
	}
	if strings.Contains(out.log(), "[TRACE]") || strings.Contains(out.log(), "[DEBUG]") {
		t.Errorf("TF_LOG reached the runtime: the log has provider trace lines")
	}
	for _, name := range []string{"TF_VAR_probe", "TF_CLI_ARGS", "TF_CLI_ARGS_apply", "TF_LOG", "TF_WORKSPACE", "KUBE_HOST", "KUBE_CONFIG_PATH", "KUBE_TOKEN"} {
		if !strings.Contains(out.stderr, name) {
			t.Errorf("dropped name %s is not logged", name)
		}
	}
	for _, value := range []string{"leaked-tf-var-value", "leaked-cli-args-value", "leakedworkspace", "leaked-kube-token", "leaked-kubeconfig", "-no-such-flag-leaked"} {
		if strings.Contains(out.log(), value) {
			t.Errorf("the log carries the dropped value %q", value)
		}
	}
}

// TestSecretsNeverInResultOrEvents: a sentinel in the credentials (the
// identity's environment) and in bootstrap_data, and a variable value a
// failing precondition prints, never reach the result document or the
// events (Security Model); show -json, which carries them, never reaches
// the log.
func TestSecretsNeverInResultOrEvents(t *testing.T) {
	f := newFixture(t, contract.RoleMachine)
	f.bootstrap = "#cloud-config\n# " + bootstrapSentinel + "\n"
	hash := f.render(`{}`)
	env := append(f.baseEnv(), "AWS_SECRET_ACCESS_KEY="+credSentinel, "PROVIDER_TOKEN="+credSentinel)

	ok := f.runEnv(env, "apply", "--guard-deletes", "--inputs-hash="+hash)
	f.mustSucceed(ok, "init,validate,plan,show,apply")
	if strings.Contains(ok.log(), bootstrapSentinel) {
		t.Errorf("bootstrap data reached the log (show -json must never be logged)")
	}

	f.render(`{"fail_with":"` + varSentinel + `"}`)
	failed := f.runEnv(env, "apply")
	e := failed.doc.Error
	if failed.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorStep || *e.Step != runner.StepApply {
		t.Fatalf("exit %d result %s\n%s", failed.code, failed.raw, failed.log())
	}
	if e.Tail != "Resource precondition failed" {
		t.Errorf("summary %q, want the diagnostic header only", e.Tail)
	}
	if !strings.Contains(failed.log(), varSentinel) {
		t.Errorf("the full stderr must reach the pod log; the test no longer proves the summary filters it")
	}

	evs, err := json.Marshal(f.events())
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(f.bootstrap))
	for _, where := range []struct{ name, text string }{
		{"result document (success)", string(ok.raw)},
		{"result document (failure)", string(failed.raw)},
		{"events", string(evs)},
	} {
		for _, s := range []string{credSentinel, bootstrapSentinel, b64, varSentinel} {
			if strings.Contains(where.text, s) {
				t.Errorf("%s carries the sentinel %q", where.name, s)
			}
		}
	}
	if !strings.Contains(string(evs), "Resource precondition failed") {
		t.Errorf("StepFailed event lacks the curated summary")
	}
}
