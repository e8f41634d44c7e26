package runner

import (
	"slices"
	"strings"
	"testing"
)

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestRewriteEnv(t *testing.T) {
	const work = "/captf/work"
	for _, tc := range []struct {
		name        string
		in          []string
		cli         string
		want        map[string]string // "" value = must be absent
		wantDropped []string
	}{
		{
			name: "HOME is forced to the work dir and TF_DATA_DIR under it",
			in:   []string{"HOME=/root", "TF_DATA_DIR=/elsewhere", "PATH=/bin"},
			want: map[string]string{"HOME": work, "TF_DATA_DIR": work + "/.terraform", "PATH": "/bin"},
			// TF_DATA_DIR from the container is replaced, so it is dropped first.
			wantDropped: []string{"TF_DATA_DIR"},
		},
		{
			name: "TMPDIR is kept when set",
			in:   []string{"TMPDIR=/tmp"},
			want: map[string]string{"TMPDIR": "/tmp"},
		},
		{
			name: "TMPDIR defaults to <workdir>/tmp",
			in:   nil,
			want: map[string]string{"TMPDIR": work + "/tmp"},
		},
		{
			name: "every other TF_* and KUBE_* is dropped; TF_IN_AUTOMATION, TF_INPUT and KUBE_NAMESPACE stay",
			in: []string{
				"TF_IN_AUTOMATION=1", "TF_INPUT=0", "KUBE_NAMESPACE=team-a",
				"TF_VAR_region=leak", "TF_CLI_ARGS=-destroy", "TF_CLI_ARGS_apply=-target=x", "TF_LOG=TRACE",
				"TF_WORKSPACE=other", "TF_PLUGIN_CACHE_DIR=/cache", "TF_CLI_CONFIG_FILE=/evil.tfrc",
				"KUBE_CONFIG_PATH=/kubeconfig", "KUBE_TOKEN=tok",
				"KUBERNETES_SERVICE_HOST=10.0.0.1", "AWS_SECRET_ACCESS_KEY=secret", "CHECKPOINT_DISABLE=1",
			},
			want: map[string]string{
				"TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "KUBE_NAMESPACE": "team-a",
				"KUBERNETES_SERVICE_HOST": "10.0.0.1", "AWS_SECRET_ACCESS_KEY": "secret", "CHECKPOINT_DISABLE": "1",
				"TF_VAR_region": "", "TF_CLI_ARGS": "", "TF_CLI_ARGS_apply": "", "TF_LOG": "", "TF_WORKSPACE": "",
				"TF_PLUGIN_CACHE_DIR": "", "TF_CLI_CONFIG_FILE": "", "KUBE_CONFIG_PATH": "", "KUBE_TOKEN": "",
			},
			wantDropped: []string{
				"KUBE_CONFIG_PATH", "KUBE_TOKEN", "TF_CLI_ARGS", "TF_CLI_ARGS_apply", "TF_CLI_CONFIG_FILE",
				"TF_LOG", "TF_PLUGIN_CACHE_DIR", "TF_VAR_region", "TF_WORKSPACE",
			},
		},
		{
			name: "with a provider mirror, TF_CLI_CONFIG_FILE points at the runner's cli.tfrc",
			in:   []string{"TF_CLI_CONFIG_FILE=/evil.tfrc"},
			cli:  work + "/cli.tfrc",
			want: map[string]string{"TF_CLI_CONFIG_FILE": work + "/cli.tfrc"},
			// The container's own value is still dropped (and logged by name).
			wantDropped: []string{"TF_CLI_CONFIG_FILE"},
		},
		{
			name: "TF_PLUGIN_CACHE_DIR is never set",
			in:   []string{"TF_PLUGIN_CACHE_DIR=/x"},
			cli:  work + "/cli.tfrc",
			want: map[string]string{"TF_PLUGIN_CACHE_DIR": ""},
			// dropped
			wantDropped: []string{"TF_PLUGIN_CACHE_DIR"},
		},
		{
			name: "entries without a name are ignored",
			in:   []string{"=weird", "NOVALUE"},
			want: map[string]string{"": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := RewriteEnv(tc.in, work, tc.cli)
			got := envMap(p.Env)
			for k, v := range tc.want {
				gv, ok := got[k]
				if v == "" && ok {
					t.Errorf("%s is set (%q), want it absent", k, gv)
				}
				if v != "" && gv != v {
					t.Errorf("%s = %q, want %q", k, gv, v)
				}
			}
			if !slices.Equal(p.Dropped, tc.wantDropped) {
				t.Errorf("dropped %v, want %v", p.Dropped, tc.wantDropped)
			}
			if !slices.IsSorted(p.Env) {
				t.Errorf("env not sorted")
			}
			for _, d := range p.Dropped {
				if strings.Contains(d, "=") {
					t.Errorf("dropped entry %q carries a value", d)
				}
			}
		})
	}
}

func TestCLIConfig(t *testing.T) {
	got := CLIConfig("/captf/providers")
	for _, want := range []string{
		"provider_installation {",
		`path    = "/captf/providers"`,
		`include = ["*/*/*"]`,
		"direct {",
		`exclude = ["*/*/*"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("cli.tfrc lacks %q:\n%s", want, got)
		}
	}
	if s := CLIConfig(`/odd/${x}/"q"`); !strings.Contains(s, `"/odd/$${x}/\"q\""`) {
		t.Errorf("path not escaped for HCL: %s", s)
	}
}
