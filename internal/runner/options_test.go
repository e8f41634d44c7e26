package runner

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func parseRun(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	var o Options
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	AddRunFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &o, o.Validate(fs.Args())
}

func TestRunFlags(t *testing.T) {
	t.Run("defaults are the fixed paths of the Image Contract", func(t *testing.T) {
		o, err := parseRun(t, "--op=apply")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Bin, []string{"/captf/runtime"}) || o.Module != "/captf/module" || o.Providers != "/captf/providers" ||
			o.Workdir != "/captf/work" || o.Config != "/captf/config" || o.Result != "/dev/termination-log" {
			t.Errorf("defaults %+v", o)
		}
		if o.LockTimeout != 5*time.Minute || o.StopTimeout != time.Minute {
			t.Errorf("timeouts %s %s", o.LockTimeout, o.StopTimeout)
		}
	})

	t.Run("the golden Job's arguments parse", func(t *testing.T) {
		o, err := parseRun(t, "--op", "apply", "--bin=/captf/runtime", "--image", "reg/x:v1", "--module=/captf/module",
			"--providers=/captf/providers", "--workdir=/captf/work", "--config=/captf/config", "--lock-timeout=300s",
			"--stop-timeout=570s", "--backend-config=secret_suffix=abc-c", "--backend-config=namespace=ns",
			"--backend-config=in_cluster_config=true", `--backend-config=labels={"captf.io/managed"="true"}`,
			"--guard-deletes", "--inputs-hash=h2:abc", "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/ns/c1/uid-1",
			"--job-name=captf-c-c1-apply-a1-abcdef")
		if err != nil {
			t.Fatal(err)
		}
		if len(o.BackendConfig) != 4 || !o.GuardDeletes || o.StopTimeout != 570*time.Second || !o.Guarded() {
			t.Errorf("parsed %+v", o)
		}
		if v, _ := o.BackendConfigValue("namespace"); v != "ns" {
			t.Errorf("namespace %q", v)
		}
	})

	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown --op is a usage error", []string{"--op=upgrade"}, "unknown operation"},
		{"missing --op is a usage error", nil, "--op is required"},
		{"unexpected arguments are a usage error", []string{"--op=apply", "extra"}, "unexpected arguments"},
		{"a negative lock timeout is a usage error", []string{"--op=apply", "--lock-timeout=-1s"}, "--lock-timeout"},
		{"restore needs chunks", []string{"--op=restore"}, "--restore-chunks"},
		{"chunks only with restore", []string{"--op=apply", "--restore-chunks=2"}, "only valid with --op=restore"},
		{"a malformed event object is a usage error", []string{"--op=apply", "--event-object=v1/Kind/name"}, "--event-object"},
		{"an empty backend config is a usage error", []string{"--op=apply", "--backend-config="}, "--backend-config"},
		{"an empty --bin is a usage error", []string{"--op=apply", "--bin="}, "--bin"},
		{"bad duration is a usage error", []string{"--op=apply", "--stop-timeout=soon"}, "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRun(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseObjectRef(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want ObjectRef
		ok   bool
	}{
		{"grouped apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1/TerraformMachine/ns/m-1/0b1c", ObjectRef{"infrastructure.cluster.x-k8s.io/v1alpha1", "TerraformMachine", "ns", "m-1", "0b1c"}, true},
		{"core apiVersion", "v1/ConfigMap/ns/cm/u", ObjectRef{"v1", "ConfigMap", "ns", "cm", "u"}, true},
		{"too few parts", "v1/ConfigMap/ns/cm", ObjectRef{}, false},
		{"empty part", "v1/ConfigMap//cm/u", ObjectRef{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseObjectRef(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if got != tc.want {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func TestCommandArgs(t *testing.T) {
	o := &Options{
		Op:            infrav1.OperationApply,
		LockTimeout:   90 * time.Second,
		BackendConfig: []string{"secret_suffix=abc-c", "namespace=ns"},
		ForceUnlock:   "lock-123",
	}
	const planPath = "/captf/work/plan.tfplan"
	for _, tc := range []struct {
		name   string
		step   string
		drift  bool
		plan   string
		backup string
		want   string
	}{
		{"init carries -input=false -no-color -lock-timeout and every backend config", StepInit, false, "", "",
			"init -input=false -no-color -lock-timeout=90s -backend-config=secret_suffix=abc-c -backend-config=namespace=ns"},
		{"force-unlock takes only -force and the ID", StepForceUnlock, false, "", "", "force-unlock -force lock-123"},
		{"validate carries -json -no-color", StepValidate, false, "", "", "validate -json -no-color"},
		{"plan: detailed exit code and a plan file", StepPlan, false, planPath, "",
			"plan -input=false -no-color -lock-timeout=90s -detailed-exitcode -var-file=terraform.tfvars.json -out=" + planPath},
		{"the drift plan does not refresh again", StepPlan, true, planPath, "",
			"plan -input=false -no-color -lock-timeout=90s -detailed-exitcode -refresh=false -var-file=terraform.tfvars.json -out=" + planPath},
		{"show carries -json -no-color", StepShow, false, planPath, "", "show -json -no-color " + planPath},
		{"apply of a saved plan", StepApply, false, planPath, "", "apply -input=false -no-color -lock-timeout=90s " + planPath},
		{"unguarded apply", StepApply, false, "", "", "apply -input=false -no-color -lock-timeout=90s -auto-approve -var-file=terraform.tfvars.json"},
		{"refresh is apply -refresh-only", StepRefresh, false, "", "", "apply -input=false -no-color -lock-timeout=90s -refresh-only -auto-approve -var-file=terraform.tfvars.json"},
		{"destroy", StepDestroy, false, "", "", "destroy -input=false -no-color -lock-timeout=90s -auto-approve -var-file=terraform.tfvars.json"},
		{"state push carries only -force and -lock-timeout", StepStatePush, false, "", "/captf/work/restore.tfstate", "state push -force -lock-timeout=90s /captf/work/restore.tfstate"},
		{"state list takes no flags", StepStateList, false, "", "", "state list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(CommandArgs(o, tc.step, tc.drift, tc.plan, tc.backup), " ")
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if strings.Contains(got, "-chdir") {
				t.Errorf("the runner never uses -chdir")
			}
		})
	}

	t.Run("lock timeouts round up to whole seconds", func(t *testing.T) {
		for d, want := range map[time.Duration]string{0: "-lock-timeout=0s", 1500 * time.Millisecond: "-lock-timeout=2s", 5 * time.Minute: "-lock-timeout=300s"} {
			if got := (&Options{LockTimeout: d}).LockTimeoutFlag(); got != want {
				t.Errorf("%s: %s, want %s", d, got, want)
			}
		}
	})
}

func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"version prints the version", []string{"version"}, ExitOK, "(devel)"},
		{"--version prints the version", []string{"--version"}, ExitOK, "(devel)"},
		{"no command is a usage error", nil, ExitUsage, ""},
		{"unknown command is a usage error", []string{"frobnicate"}, ExitUsage, ""},
		{"unknown flag is a usage error", []string{"run", "--op=apply", "--nope"}, ExitUsage, ""},
		{"unknown op is a usage error", []string{"run", "--op=upgrade"}, ExitUsage, ""},
		{"bad logging flags are a usage error", []string{"run", "--op=apply", "--logging-format=xml"}, ExitUsage, ""},
		{"copy needs exactly one destination", []string{"copy"}, ExitUsage, ""},
		{"version takes no arguments", []string{"version", "x"}, ExitUsage, ""},
		{"version after a bad call still works", []string{"version"}, ExitOK, "(devel)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := Main(tc.args, &out, &errb); got != tc.want {
				t.Errorf("exit %d, want %d (stderr %q)", got, tc.want, errb.String())
			}
			if tc.out != "" && !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.out)
			}
		})
	}
}

func TestCopySelf(t *testing.T) {
	dest := t.TempDir() + "/runner"
	var out, errb bytes.Buffer
	if code := Main([]string{"copy", dest}, &out, &errb); code != ExitOK {
		t.Fatalf("copy exited %d: %s", code, errb.String())
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	sfi, _ := os.Stat(self)
	if fi.Size() != sfi.Size() || fi.Mode().Perm() != 0o755 {
		t.Errorf("copy is %d bytes mode %v, want %d bytes mode 0755", fi.Size(), fi.Mode().Perm(), sfi.Size())
	}
	if code := Main([]string{"copy", "/nonexistent-dir/runner"}, &out, &errb); code != ExitFailure {
		t.Errorf("copy to a missing directory exited %d, want %d", code, ExitFailure)
	}
}
