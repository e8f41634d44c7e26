package runner

import (
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

func TestFailureSummary(t *testing.T) {
	const sentinel = "s3cr3t-VALUE-never-shown"
	boxed := "\n\x1b[31m╷\x1b[0m\n\x1b[31m│\x1b[0m \x1b[1m\x1b[31mError: \x1b[0m\x1b[0m\x1b[1mError acquiring the state lock\x1b[0m\n│ \n│ Error message: lease held; value " + sentinel + "\n╵\n"
	validateJSON := `{"format_version":"1.0","valid":false,"error_count":2,"warning_count":1,"diagnostics":[` +
		`{"severity":"warning","summary":"Deprecated thing","detail":"ignore"},` +
		`{"severity":"error","summary":"Unsupported argument","detail":"An argument named ` + sentinel + ` is not expected here.","range":{"filename":"../../module/main.tf","start":{"line":7,"column":3,"byte":80},"end":{"line":7,"column":9,"byte":86}}},` +
		`{"severity":"error","summary":"Missing required argument","detail":"x"}]}`

	for _, tc := range []struct {
		name     string
		step     string
		exit     int
		validate string
		stderr   string
		want     string
	}{
		{
			name:     "validate: the summary comes from its JSON diagnostics, errors only, with file and line",
			step:     "validate",
			exit:     1,
			validate: validateJSON,
			stderr:   "Error: something else\n",
			want:     "Unsupported argument (../../module/main.tf:7); Missing required argument",
		},
		{
			name:   "other steps: the Error: header lines of stderr with ANSI codes stripped",
			step:   "init",
			exit:   1,
			stderr: boxed,
			want:   "Error acquiring the state lock",
		},
		{
			name:   "several Error: headers are joined once each",
			step:   "apply",
			exit:   1,
			stderr: "│ Error: creating instance\n│ detail " + sentinel + "\n│ Error: creating instance\nError: quota exceeded\n",
			want:   "creating instance; quota exceeded",
		},
		{
			name: "init, package against the lock file: the provider, its version and the reason in fixed words",
			step: "init",
			exit: 1,
			stderr: "\n│ Error: Failed to install provider\n│ \n│ Error while installing terraform-provider-openstack/openstack v3.4.0: the\n│ local package for\n│ registry.terraform.io/terraform-provider-openstack/openstack 3.4.0 doesn't\n" +
				"│ match any of the checksums previously recorded in the dependency lock file\n│ (this might be because " + sentinel + "); for more information:\n│ https://www.terraform.io/language/provider-checksum-verification\n╵\n",
			want: "Failed to install provider: registry.terraform.io/terraform-provider-openstack/openstack v3.4.0: the package matches none of the checksums in the dependency lock file",
		},
		{
			name: "init, no package for the platform: the provider and the platform",
			step: "init",
			exit: 1,
			stderr: "Error: Incompatible provider version\n\nProvider registry.opentofu.org/terraform-provider-openstack/openstack v3.4.0\n" +
				"does not have a package available for your current platform, linux_amd64.\n\nProvider releases are separate " + sentinel + "\n",
			want: "Incompatible provider version: registry.opentofu.org/terraform-provider-openstack/openstack v3.4.0 for linux_amd64: the mirror has no package for the platform",
		},
		{
			name: "init, provider not in the mirror: the provider, never the mirror's path",
			step: "init",
			exit: 1,
			stderr: "│ Error: Failed to query available provider packages\n│\n│ Could not retrieve the list of available versions for provider\n│ terraform-provider-openstack/openstack: provider\n" +
				"│ registry.terraform.io/terraform-provider-openstack/openstack was not found in\n│ any of the search locations\n│\n│   - /tmp/" + sentinel + "/providers\n╵\n",
			want: "Failed to query available provider packages: registry.terraform.io/terraform-provider-openstack/openstack: the provider is not in the mirror",
		},
		{
			name:   "another diagnostic's detail adds nothing",
			step:   "init",
			exit:   1,
			stderr: "│ Error: Backend initialization required\n│ registry.terraform.io/a/b v1.2.3 linux_amd64 " + sentinel + "\n╵\n",
			want:   "Backend initialization required",
		},
		{
			name:     "validate output that is not JSON falls back to stderr",
			step:     "validate",
			exit:     1,
			validate: "garbage",
			stderr:   "Error: Module not installed\n",
			want:     "Module not installed",
		},
		{
			name:   "no Error: line: the fallback text",
			step:   "plan",
			exit:   1,
			stderr: "panic: runtime error\n" + sentinel + "\n",
			want:   "step plan exited 1; see the Job's logs",
		},
		{
			name: "no output at all: the fallback text with the exit code",
			step: "destroy",
			exit: 137,
			want: "step destroy exited 137; see the Job's logs",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FailureSummary(tc.step, tc.exit, []byte(tc.validate), []byte(tc.stderr))
			if got != tc.want {
				t.Errorf("summary = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, sentinel) {
				t.Errorf("summary carries a value: %q", got)
			}
		})
	}

	t.Run("the summary is capped at 512 bytes and keeps whole lines", func(t *testing.T) {
		var b strings.Builder
		for i := 0; i < 100; i++ {
			b.WriteString("Error: a fairly long diagnostic summary line number ")
			b.WriteString(strings.Repeat("z", i%7))
			b.WriteString(string(rune('A' + i%26)))
			b.WriteString("\n")
		}
		got := FailureSummary("apply", 1, nil, []byte(b.String()))
		if len(got) > result.MaxSummaryBytes {
			t.Fatalf("summary is %d bytes", len(got))
		}
		if strings.HasSuffix(got, ";") || strings.HasSuffix(got, "; ") {
			t.Errorf("summary ends in a separator: %q", got)
		}
	})

	t.Run("a single oversized header is cut at a rune boundary", func(t *testing.T) {
		got := FailureSummary("apply", 1, nil, []byte("Error: "+strings.Repeat("ü", 600)+"\n"))
		if len(got) > result.MaxSummaryBytes || !strings.HasPrefix(got, "üü") {
			t.Errorf("summary %d bytes: %q...", len(got), got[:10])
		}
	})
}

func TestStripANSI(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"colors", "\x1b[1;31mred\x1b[0m", "red"},
		{"cursor movement", "a\x1b[2Kb\x1b[1Gc", "abc"},
		{"OSC hyperlink", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "link"},
		{"plain text untouched", "Error: plain", "Error: plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(StripANSI([]byte(tc.in))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseChangesLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want *result.Changes
	}{
		{"apply summary line", "Apply complete! Resources: 1 added, 2 changed, 3 destroyed.", &result.Changes{Add: 1, Change: 2, Destroy: 3}},
		{"apply with imports", "Apply complete! Resources: 4 imported, 1 added, 0 changed, 0 destroyed.", &result.Changes{Import: 4, Add: 1}},
		{"apply with forgotten resources", "Apply complete! Resources: 0 added, 0 changed, 0 destroyed, 2 forgotten.", &result.Changes{}},
		{"destroy summary line", "Destroy complete! Resources: 3 destroyed.", &result.Changes{Destroy: 3}},
		{"colored line", "\x1b[0m\x1b[1m\x1b[32mApply complete! Resources: 1 added, 0 changed, 0 destroyed.\x1b[0m", &result.Changes{Add: 1}},
		{"other line", "Plan: 1 to add, 0 to change, 0 to destroy.", nil},
		{"an output echoing the words", `msg = "Apply complete! Resources: lots"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseChangesLine(tc.line)
			if (tc.want == nil) != !ok {
				t.Fatalf("ok = %v, want %v", ok, tc.want != nil)
			}
			if tc.want != nil && *got != *tc.want {
				t.Errorf("got %+v, want %+v", *got, *tc.want)
			}
		})
	}
}

func TestUnlockedAlready(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stderr string
		want   bool
	}{
		{"already unlocked is success", "│ Error: Failed to unlock state: state is already unlocked\n", true},
		{"another lock ID holds it now: the stale one is gone", "Failed to unlock state: lock id \"a\" does not match existing lock\n", true},
		{"no lock Lease at all", "Error: Failed to unlock state: leases.coordination.k8s.io \"lock-tfstate-default-x\" not found\n", true},
		{"a real failure", "Error: Failed to unlock state: connection refused\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unlockedAlready([]byte(tc.stderr)); got != tc.want {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestManagedResourcesAndVersion(t *testing.T) {
	list := "terraform_data.a\nmodule.role.terraform_data.b[0]\ndata.terraform_remote_state.x\nmodule.role.data.external.y\n\n"
	if n := ManagedResources([]byte(list)); n != 2 {
		t.Errorf("ManagedResources = %d, want 2 (data sources are not managed resources)", n)
	}
	if v := RuntimeVersion([]byte(`{"terraform_version":"1.12.6","platform":"linux_amd64","provider_selections":{}}`)); v != "1.12.6" {
		t.Errorf("RuntimeVersion = %q", v)
	}
	if v := RuntimeVersion([]byte("OpenTofu v1.12.6")); v != "" {
		t.Errorf("RuntimeVersion of non-JSON = %q, want empty", v)
	}
}
