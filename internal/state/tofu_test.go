package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// tofuModule is a tiny root module: managed resources with count and
// for_each, a data source, and outputs, one of them sensitive.
const tofuModule = `
terraform {
  backend "kubernetes" {}
}

variable "n" {
  type    = number
  default = 2
}

variable "sleep" {
  type    = number
  default = 0
}

resource "terraform_data" "many" {
  count = var.n
  input = "item-${count.index}"
}

resource "terraform_data" "keyed" {
  for_each = toset(["a", "b"])
  input    = each.key
}

resource "terraform_data" "one" {
  input = { x = 1, nested = ["p", "q"] }
  triggers_replace = [var.sleep]
  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}

data "terraform_remote_state" "nothing" {
  backend = "local"
  defaults = { unused = true }
  config = { path = "${path.module}/other.tfstate" }
}

output "endpoint" {
  value = { host = "10.0.0.1", port = 6443 }
}

output "token" {
  value     = "` + sentinel + `"
  sensitive = true
}

output "names" {
  value = [for r in terraform_data.many : r.output]
}
`

// tofuWorkspace is a root module directory with its own tofu environment.
type tofuWorkspace struct {
	t      testing.TB
	bin    string
	dir    string
	env    []string
	e      *testEnv
	ns     string
	suffix string
}

func newTofuWorkspace(t *testing.T, e *testEnv, ns, suffix string, extraEnv ...string) *tofuWorkspace {
	t.Helper()
	return newTofuWorkspaceTB(t, e, ns, suffix, tofuModule, extraEnv...)
}

// newTofuWorkspaceTB writes module into a fresh directory and sets up
// tofu's environment there.
func newTofuWorkspaceTB(t testing.TB, e *testEnv, ns, suffix, module string, extraEnv ...string) *tofuWorkspace {
	t.Helper()
	bin, err := tools.Path("tofu")
	if err != nil {
		t.Fatalf("tofu: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(module), 0o600); err != nil {
		t.Fatal(err)
	}
	other := `{"version":4,"terraform_version":"1.12.6","serial":1,"lineage":"other","outputs":{},"resources":[]}`
	if err := os.WriteFile(filepath.Join(dir, "other.tfstate"), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(cli, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"TMPDIR=" + os.TempDir(),
		"TF_DATA_DIR=" + filepath.Join(dir, ".terraform"),
		"TF_CLI_CONFIG_FILE=" + cli,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
	}
	return &tofuWorkspace{t: t, bin: bin, dir: dir, env: append(env, extraEnv...), e: e, ns: ns, suffix: suffix}
}

// command builds a tofu command in the workspace.
func (w *tofuWorkspace) command(args ...string) *exec.Cmd {
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	return cmd
}

// run runs tofu and returns its stdout, failing the test on error.
func (w *tofuWorkspace) run(args ...string) []byte {
	w.t.Helper()
	cmd := w.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("tofu %s: %v\n%s\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// init configures the kubernetes backend the way CAPTF's runner does, with
// config_path instead of in-cluster config.
func (w *tofuWorkspace) init() {
	w.t.Helper()
	w.run("init", "-input=false", "-no-color",
		"-backend-config=config_path="+w.e.kubeconfig,
		"-backend-config=namespace="+w.ns,
		"-backend-config=secret_suffix="+w.suffix,
		`-backend-config=labels={"captf.io/managed"="true","captf.infrastructure.cluster.x-k8s.io/owner-kind"="TerraformMachine","clusterctl.cluster.x-k8s.io/move"=""}`)
}

func (w *tofuWorkspace) apply(vars ...string) {
	w.t.Helper()
	args := []string{"apply", "-auto-approve", "-input=false", "-no-color"}
	for _, v := range vars {
		args = append(args, "-var="+v)
	}
	w.run(args...)
}

// pulled is the state as tofu itself reports it.
type pulled struct {
	Serial           uint64 `json:"serial"`
	Lineage          string `json:"lineage"`
	TerraformVersion string `json:"terraform_version"`
}

func (w *tofuWorkspace) pull() pulled {
	w.t.Helper()
	var p pulled
	if err := json.Unmarshal(w.run("state", "pull"), &p); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func TestTofuWrittenState(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "tofu-machine")
	suffix, _ := SuffixOf(o)
	w := newTofuWorkspace(t, e, ns, suffix)
	w.init()
	w.apply()

	c := e.managedCache(t)
	var st *State
	want := w.pull()
	eventually(t, 10*time.Second, func() error {
		var err error
		st, err = Read(ctx, c, ns, suffix, DefaultLimits)
		if err == nil && st.Serial != want.Serial {
			err = fmt.Errorf("cache has serial %d, tofu %d", st.Serial, want.Serial)
		}
		return err
	})
	if st.Chunks != 1 || st.ChunkNames()[0] != SecretName(suffix) {
		t.Errorf("OpenTofu writes one Secret named %s: %v", SecretName(suffix), st.ChunkNames())
	}
	if st.Lineage != want.Lineage || st.RuntimeVersion != want.TerraformVersion || st.RuntimeVersion != "1.12.6" {
		t.Errorf("lineage/version %s/%s, tofu says %+v", st.Lineage, st.RuntimeVersion, want)
	}
	if st.ManagedResources != 3 {
		t.Errorf("managed resources = %d, want 3 (count and for_each once each, the data source not at all)", st.ManagedResources)
	}
	// Outputs match what tofu itself reports, value for value.
	var tofuOut map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Value     json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(w.run("output", "-json"), &tofuOut); err != nil {
		t.Fatal(err)
	}
	if len(tofuOut) != len(st.Outputs) {
		t.Errorf("outputs %v, tofu has %d", st.Outputs.Names(), len(tofuOut))
	}
	for name, to := range tofuOut {
		got, ok := st.Outputs[name]
		if !ok {
			t.Errorf("output %s missing", name)
			continue
		}
		var a, b any
		_ = json.Unmarshal(got.Value, &a)
		_ = json.Unmarshal(to.Value, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) || got.Sensitive != to.Sensitive {
			t.Errorf("output %s differs from tofu output -json", name)
		}
	}
	if !st.Outputs["token"].Sensitive {
		t.Error("token is sensitive")
	}

	// Adopt, back up, change, adopt and back up again.
	if _, err := Adopt(ctx, e.client, o, st, "h2:first"); err != nil {
		t.Fatal(err)
	}
	out, err := SyncBackups(ctx, e.client, o, st, nil, BackupOptions{Keep: DefaultBackups})
	if err != nil || out.Taken == nil || out.Taken.Serial != st.Serial {
		t.Fatalf("first backup: %+v %v", out, err)
	}
	first := st.Serial

	w.apply("n=3")
	st2, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Serial <= first || st2.ManagedResources != 3 || st2.InputsHash != "h2:first" {
		t.Fatalf("after the second apply: %v inputs %s", st2.MarshalLog(), st2.InputsHash)
	}
	if _, err := Adopt(ctx, e.client, o, st2, "h2:second"); err != nil {
		t.Fatalf("re-adopting the Secret tofu rewrote: %v", err)
	}
	out, err = SyncBackups(ctx, e.client, o, st2, nil, BackupOptions{Keep: DefaultBackups})
	if err != nil || out.Taken == nil || len(out.Backups) != 2 {
		t.Fatalf("second backup: %+v %v", out, err)
	}

	// The restore input of the first backup is the state tofu wrote then;
	// pushed back with state push -force, it becomes the state again.
	r, err := RestoreInput(ctx, e.client, ns, suffix, first)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(bytes.Join(r.Chunks, nil)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	restoreFile := filepath.Join(w.dir, "restore.tfstate")
	if err := os.WriteFile(restoreFile, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	w.run("state", "push", "-force", restoreFile)
	st3, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	list := strings.Fields(string(w.run("state", "list")))
	t.Logf("restored backup serial %d over serial %d: the state now has serial %d and %d instances", first, st2.Serial, st3.Serial, len(list))
	// Two count instances, two for_each instances, one single resource and
	// the data source, as after the first apply.
	if st3.Lineage != st.Lineage || len(list) != 6 || st3.ManagedResources != 3 {
		t.Errorf("restored state: lineage %s, instances %v", st3.Lineage, list)
	}
	// A forced push of an older serial lands on the next serial after the
	// one it pushed (here the serial already backed up from the second
	// apply, with other content): that serial counts as observed and is
	// reported as a conflict rather than overwriting its backup.
	out, err = SyncBackups(ctx, e.client, o, st3, nil, BackupOptions{Keep: DefaultBackups})
	if err != nil {
		t.Fatal(err)
	}
	if st3.Serial == st2.Serial {
		if out.Taken != nil || !out.Conflict {
			t.Errorf("restored state on an observed serial: %+v", out)
		}
	} else if out.Taken == nil {
		t.Errorf("restored state on a new serial is backed up: %+v", out)
	}
	if st3.InputsHash != "h2:second" {
		t.Errorf("the backend keeps annotations on rewrite; inputs hash %q", st3.InputsHash)
	}
}

func TestTofuLockInfo(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "tofu-locked")
	suffix, _ := SuffixOf(o)
	w := newTofuWorkspace(t, e, ns, suffix)
	w.init()

	cmd := w.command("apply", "-auto-approve", "-input=false", "-no-color", "-var=sleep=4")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var l Lock
	eventually(t, 30*time.Second, func() error {
		var err error
		l, err = ReadLock(ctx, e.client, ns, suffix)
		if err == nil && !l.Held() {
			err = errors.New("lock not held yet")
		}
		return err
	})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("apply: %v\n%s", err, stderr.String())
	}
	host, _ := os.Hostname()
	if l.Info == nil || l.Info.ID != l.ID || !strings.HasSuffix(l.Info.Who, "@"+host) || l.Info.Operation != "OperationTypeApply" || l.Info.Created.IsZero() {
		t.Fatalf("lock info as tofu writes it: %+v (%s)", l.Info, l.InfoProblem)
	}
	if v := ClassifyLock(l, LockOwners{}); v.Holder != LockForeign || !strings.Contains(v.Message(), l.Info.Who) {
		t.Errorf("a holder that is not one of the object's runner pods: %+v", v)
	}
	if v := ClassifyLock(l, LockOwners{Pods: []RunnerPod{{Name: host, Exited: true}}}); v.Holder != LockStale || v.ID != l.ID {
		t.Errorf("the same lock held by an exited runner pod of the object: %+v", v)
	}
	after, err := ReadLock(ctx, e.client, ns, suffix)
	if err != nil || !after.Exists || after.Held() {
		t.Errorf("after a clean exit the Lease stays, unheld: %+v %v", after, err)
	}
}

// TestTofuEncryptedState has OpenTofu write state with client-side
// encryption (pbkdf2 key provider, aes_gcm method) through the backend.
func TestTofuEncryptedState(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "tofu-encrypted")
	suffix, _ := SuffixOf(o)
	enc := `
key_provider "pbkdf2" "k" {
  passphrase = "correct-horse-battery-staple-42"
}
method "aes_gcm" "m" {
  keys = key_provider.pbkdf2.k
}
state {
  method = method.aes_gcm.m
}
`
	w := newTofuWorkspace(t, e, ns, suffix, "TF_ENCRYPTION="+enc)
	w.init()
	w.apply()

	st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
	if st != nil || !errors.Is(err, ErrEncrypted) || ReasonOf(err) != ReasonEncrypted {
		t.Fatalf("encrypted state read as %v, %v", st != nil, err)
	}
	if strings.Contains(err.Error(), sentinel) {
		t.Error("the error shows state content")
	}
	out, err2 := SyncBackups(ctx, e.client, o, st, err, BackupOptions{Keep: DefaultBackups})
	if err2 != nil || !out.Skipped || out.Taken != nil {
		t.Errorf("encrypted state is never backed up: %+v %v", out, err2)
	}
	if n := len(listBackupSecrets(t, e, ns, suffix)); n != 0 {
		t.Errorf("%d backup Secrets of an encrypted state", n)
	}
}
