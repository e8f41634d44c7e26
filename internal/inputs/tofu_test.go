package inputs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// tofuRoot lays a rendered root out the way a Job does: the module at
// <dir>/module (the image's /captf/module) and the generated root at
// <dir>/work/root, so that "../../module" resolves to it.
type tofuRoot struct {
	t    *testing.T
	tofu string
	dir  string
	root string
	env  []string
}

func newTofuRoot(t *testing.T, role contract.Role, r *inputs.Rendered) *tofuRoot {
	t.Helper()
	tofu, err := tools.Path("tofu")
	if err != nil {
		t.Fatalf("tofu: %v", err)
	}
	repo, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "module"), os.DirFS(filepath.Join(repo, "modules", "noop", string(role)))); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "work", "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{contract.MainFile: r.MainTF, contract.TFVarsFile: r.TFVars} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A provider installation that can only read an empty filesystem
	// mirror: the no-op modules need no provider download, and a test that
	// tried one would fail instead of reaching the network.
	mirror := filepath.Join(dir, "providers")
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "work", "cli.tfrc")
	rc := `provider_installation {
  filesystem_mirror {
    path    = "` + mirror + `"
    include = ["*/*/*"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}
`
	if err := os.WriteFile(cli, []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	env := []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + work,
		"TF_DATA_DIR=" + filepath.Join(work, ".terraform"),
		"TMPDIR=" + t.TempDir(),
		"TF_CLI_CONFIG_FILE=" + cli,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
	}
	return &tofuRoot{t: t, tofu: tofu, dir: dir, root: root, env: env}
}

// run runs tofu in the root and returns its exit code, stdout and stderr.
func (r *tofuRoot) run(args ...string) (int, string, string) {
	r.t.Helper()
	cmd := exec.Command(r.tofu, args...)
	cmd.Dir = r.root
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	r.t.Fatalf("tofu %v: %v", args, err)
	return 0, "", ""
}

func (r *tofuRoot) mustRun(args ...string) string {
	r.t.Helper()
	code, out, errOut := r.run(args...)
	if code != 0 {
		r.t.Fatalf("tofu %s exited %d:\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// validate runs init -backend=false then validate -json and returns the
// validate document.
func (r *tofuRoot) validate() validateResult {
	r.t.Helper()
	r.mustRun("init", "-backend=false", "-input=false", "-no-color")
	_, out, errOut := r.run("validate", "-json", "-no-color")
	var v validateResult
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		r.t.Fatalf("validate -json output: %v\n%s\n%s", err, out, errOut)
	}
	return v
}

type validateResult struct {
	Valid       bool `json:"valid"`
	Diagnostics []struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
	} `json:"diagnostics"`
}

func (v validateResult) String() string {
	var b strings.Builder
	for _, d := range v.Diagnostics {
		b.WriteString(d.Severity + ": " + d.Summary + ": " + d.Detail + "\n")
	}
	return b.String()
}

func render(t *testing.T, req inputs.Request) *inputs.Rendered {
	t.Helper()
	r, err := inputs.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func noopRequests() map[string]inputs.Request {
	common := inputs.Common{
		Cluster: inputs.ObjectRef{Name: "prod", Namespace: "team-a"},
		Object:  inputs.ObjectRef{Name: "prod", Namespace: "team-a"},
	}
	exports := json.RawMessage(`{"backend_id":"noop-backend/team-a/prod","network_id":"net-1","note":"a<b & c>d","endpoint":{"host":"lb","port":6443}}`)
	machine := func(mut func(*inputs.MachineInputs)) inputs.Request {
		m := &inputs.MachineInputs{
			Common:         inputs.Common{Cluster: common.Cluster, Object: inputs.ObjectRef{Name: "prod-md-0-abcde", Namespace: "team-a"}, Template: "prod-md-0"},
			ClusterOutputs: exports, MachineName: "prod-md-0-abcde-xyz12",
			BootstrapData: []byte("#cloud-config\nruncmd: [echo hi]\n"), KubernetesVersion: "v1.36.2",
		}
		if mut != nil {
			mut(m)
		}
		return inputs.Request{Image: "ghcr.io/example/noop-machine:v1", Inputs: m}
	}
	pool := func(mut func(*inputs.MachinePoolInputs)) inputs.Request {
		p := &inputs.MachinePoolInputs{
			Common:         inputs.Common{Cluster: common.Cluster, Object: inputs.ObjectRef{Name: "prod-pool", Namespace: "team-a"}},
			ClusterOutputs: exports, MachinePoolName: "prod-pool", Replicas: 3,
			BootstrapData: []byte("#cloud-config\n"), NodeLabels: map[string]string{"tier": "<web & api>"},
			ClusterFailureDomains: []string{"fd-a", "fd-b"},
		}
		if mut != nil {
			mut(p)
		}
		return inputs.Request{Image: "ghcr.io/example/noop-pool:v1", Inputs: p}
	}
	return map[string]inputs.Request{
		"cluster with every input set": {Image: "ghcr.io/example/noop-cluster:v1", Inputs: &inputs.ClusterInputs{
			Common: common, ControlPlaneEndpoint: &contract.Endpoint{Host: "api.prod.example.com", Port: 6443},
			KubernetesVersion: "v1.36.2", ControlPlaneInitialized: true,
			ClusterNetwork: inputs.NewClusterNetwork([]string{"192.168.0.0/16"}, []string{"10.96.0.0/12"}, "cluster.local", 6443),
		}},
		"cluster with every nullable input null and user variables": {Image: "ghcr.io/example/noop-cluster:v1",
			Inputs: &inputs.ClusterInputs{Common: common},
			Variables: inputs.Variables{
				// endpoint_port as a ConfigMap string the module's number type
				// converts; extra_tags as a Secret-sourced (sensitive) value.
				Values: map[string]any{"endpoint_host": "10.1.2.3", "endpoint_port": "443", "failure_domain_names": []any{"fd-a", "fd-b"},
					"extra_tags": map[string]any{"cost-center": "42"}},
				Sensitive: map[string]bool{"extra_tags": true},
			}},
		"cluster with a partial cluster network": {Image: "ghcr.io/example/noop-cluster:v1", Inputs: &inputs.ClusterInputs{
			Common: common, ClusterNetwork: inputs.NewClusterNetwork(nil, []string{"10.96.0.0/12"}, "", 0),
		}},
		"machine worker": machine(nil),
		"machine control plane in a failure domain": machine(func(m *inputs.MachineInputs) {
			m.ControlPlane, m.FailureDomain, m.BootstrapFormat = true, "fd-a", "ignition"
		}),
		"machine of an externally managed cluster": machine(func(m *inputs.MachineInputs) {
			m.ClusterOutputs, m.KubernetesVersion = inputs.ExternallyManagedClusterOutputs(), ""
		}),
		"machinepool fixed replicas": pool(nil),
		"machinepool autoscaling scaled to zero": pool(func(p *inputs.MachinePoolInputs) {
			p.Autoscaling = inputs.Autoscaling{Enabled: true, Min: 0, Max: 4}
			p.Replicas = 0
			p.FailureDomains, p.NodeLabels, p.ClusterFailureDomains = []string{"fd-b"}, nil, nil
		}),
	}
}

// TestNoopRootsValidate checks every rendered root against its no-op module
// with the real OpenTofu: init -backend=false, then validate.
func TestNoopRootsValidate(t *testing.T) {
	for name, req := range noopRequests() {
		t.Run(name, func(t *testing.T) {
			r := render(t, req)
			if v := newTofuRoot(t, req.Inputs.Role(), r).validate(); !v.Valid {
				t.Fatalf("validate failed:\n%s", v)
			}
		})
	}
}

// TestNoopRootsApply goes one step further than the contract requires of
// validate: it applies each root with local state (an override file replaces
// the kubernetes backend), reads the outputs back the way the state reader
// hands them over and decodes them: each no-op module returns a definite
// health, and the machine and pool provider IDs and the cluster endpoint a
// bring-up needs. A second plan must be empty (idempotent module).
func TestNoopRootsApply(t *testing.T) {
	for name, req := range noopRequests() {
		t.Run(name, func(t *testing.T) {
			role := req.Inputs.Role()
			r := render(t, req)
			root := newTofuRoot(t, role, r)
			override := `{"terraform":{"backend":{"local":{"path":"` + filepath.Join(root.dir, "state.tfstate") + `"}}}}`
			if err := os.WriteFile(filepath.Join(root.root, "backend_override.tf.json"), []byte(override), 0o600); err != nil {
				t.Fatal(err)
			}
			root.mustRun("init", "-input=false", "-no-color")
			root.mustRun("apply", "-auto-approve", "-input=false", "-no-color", "-var-file="+contract.TFVarsFile)
			if code, out, errOut := root.run("plan", "-detailed-exitcode", "-input=false", "-no-color", "-var-file="+contract.TFVarsFile); code != 0 {
				t.Errorf("second plan exited %d, want 0 (no changes):\n%s\n%s", code, out, errOut)
			}
			var outs map[string]struct {
				Sensitive bool            `json:"sensitive"`
				Value     json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal([]byte(root.mustRun("output", "-json")), &outs); err != nil {
				t.Fatal(err)
			}
			raw := contract.RawOutputs{}
			for k, o := range outs {
				if !o.Sensitive {
					t.Errorf("root output %s is not sensitive", k)
				}
				raw[k] = o.Value
			}
			var v contract.Verdict
			switch role {
			case contract.RoleCluster:
				var o contract.ClusterOutputs
				o, v = contract.DecodeClusterOutputs(raw, contract.ClusterFacts{})
				if !o.ControlPlaneEndpoint.Valid() || o.Exports == nil {
					t.Errorf("cluster outputs lack an endpoint or exports: %+v", o)
				}
				ci := req.Inputs.(*inputs.ClusterInputs)
				if ci.ControlPlaneEndpoint != nil && *o.ControlPlaneEndpoint != *ci.ControlPlaneEndpoint {
					t.Errorf("endpoint %v differs from the rendered input %v", o.ControlPlaneEndpoint, ci.ControlPlaneEndpoint)
				}
				if ci.ControlPlaneEndpoint == nil && !contract.ShouldWriteEndpoint(o.ControlPlaneEndpoint, nil, true) {
					t.Errorf("the module-created endpoint %v would not be written", o.ControlPlaneEndpoint)
				}
				if err := inputs.CheckClusterOutputs(o.Exports); err != nil {
					t.Errorf("noop exports cannot be handed to machines: %v", err)
				}
			case contract.RoleMachine:
				mi := req.Inputs.(*inputs.MachineInputs)
				facts := contract.MachineFacts{}
				if mi.FailureDomain != "" {
					facts.RequestedFailureDomain = &mi.FailureDomain
				}
				var o contract.MachineOutputs
				o, v = contract.DecodeMachineOutputs(raw, facts)
				if o.ProviderID == nil || *o.ProviderID != "noop:///team-a/"+mi.MachineName {
					t.Errorf("provider_id = %v", o.ProviderID)
				}
			case contract.RoleMachinePool:
				pi := req.Inputs.(*inputs.MachinePoolInputs)
				var o contract.MachinePoolOutputs
				o, v = contract.DecodeMachinePoolOutputs(raw, contract.MachinePoolFacts{})
				if o.Replicas == nil || *o.Replicas != pi.Replicas || len(o.ProviderIDList) != int(pi.Replicas) || len(o.Instances) != int(pi.Replicas) {
					t.Errorf("pool outputs do not match %d replicas: %+v", pi.Replicas, o)
				}
			}
			if v.Reason != contract.ReasonOutputsValid {
				t.Errorf("verdict %s: %s", v.Reason, v.Message)
			}
		})
	}
}

// TestUndeclaredUserVariableFailsValidate: a variable the object sets and
// the module does not declare is rejected by OpenTofu (Contract - Common
// "Unknown names fail the apply"); the controller does not check names
// against the image.
func TestUndeclaredUserVariableFailsValidate(t *testing.T) {
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			req := noopRequests()[map[contract.Role]string{
				contract.RoleCluster: "cluster with every input set", contract.RoleMachine: "machine worker",
				contract.RoleMachinePool: "machinepool fixed replicas",
			}[role]]
			req.Variables = inputs.Variables{Values: map[string]any{"not_declared_by_module": "x"}}
			v := newTofuRoot(t, role, render(t, req)).validate()
			if v.Valid {
				t.Fatal("validate accepted a user variable the module does not declare")
			}
			text := v.String()
			// Contract - Common: "Unsupported argument; for the JSON root,
			// Extraneous JSON object property".
			if !strings.Contains(text, "Extraneous JSON object property") {
				t.Errorf("diagnostics do not report the extraneous JSON property:\n%s", text)
			}
			if !strings.Contains(text, "not_declared_by_module") {
				t.Errorf("diagnostics do not name the variable:\n%s", text)
			}
		})
	}
}

// TestNoopModulesDeclareTheContract checks each no-op module's declared
// variables and outputs against the contract tables with tofu's own
// metadata, so the modules and internal/contract cannot drift apart.
func TestNoopModulesDeclareTheContract(t *testing.T) {
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			repo, err := tools.RepoRoot()
			if err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(repo, "modules", "noop", string(role))
			text := ""
			err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".tf") {
					return err
				}
				b, err := os.ReadFile(p)
				text += string(b)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range role.Inputs() {
				if !strings.Contains(text, `variable "`+in.Name+`"`) {
					t.Errorf("module does not declare input %s", in.Name)
				}
			}
			for _, o := range role.Outputs() {
				if !strings.Contains(text, `output "`+o.Name+`"`) {
					t.Errorf("module does not declare output %s", o.Name)
				}
			}
			if strings.Contains(text, "required_providers") || strings.Contains(text, "provider \"") {
				t.Error("a no-op module must need no provider download")
			}
		})
	}
}
