package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
)

const imageUID = 65532

// baseImageSpec is a module image that lints clean for the role: the base
// module of the corpus at /captf/module, an executable /captf/runtime, an
// empty provider mirror, USER 65532, every io.captf label (and, for the
// machine role, valid capacity labels).
func baseImageSpec(t testing.TB, role contract.Role, arch string) imagebuild.Spec {
	t.Helper()
	dir := t.TempDir()
	writeBase(t, dir, role)
	moduleEntries, err := imagebuild.DirEntries(dir, "/captf/module", imageUID, imageUID)
	if err != nil {
		t.Fatal(err)
	}
	moduleEntries = append(moduleEntries, imagebuild.Entry{Path: "/captf/providers", Mode: fs.ModeDir | 0o755, UID: imageUID, GID: imageUID})
	labels := map[string]string{
		contract.LabelContract: contract.Version, contract.LabelRole: string(role), contract.LabelRuntime: "tofu",
	}
	if role == contract.RoleMachine {
		labels[contract.LabelCapacity] = `{"cpu": "2", "memory": "4Gi"}`
		labels[contract.LabelNodeInfo] = `{"architecture": "` + arch + `", "operatingSystem": "linux"}`
	}
	return imagebuild.Spec{
		Platform: v1.Platform{OS: "linux", Architecture: arch},
		Layers: []imagebuild.Layer{
			{ParentUID: imageUID, ParentGID: imageUID, Entries: []imagebuild.Entry{
				{Path: "/captf/runtime", Mode: 0o755, UID: imageUID, GID: imageUID, Data: []byte("#!/bin/false\n")},
			}},
			{ParentUID: imageUID, ParentGID: imageUID, Entries: moduleEntries},
		},
		User:   "65532",
		Labels: labels,
	}
}

func buildImage(t testing.TB, spec imagebuild.Spec) v1.Image {
	t.Helper()
	img, err := imagebuild.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writeLayout writes an image or an index to a fresh OCI layout and returns
// its oci: reference.
func writeLayout(t testing.TB, img v1.Image) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	if _, err := imagebuild.WriteLayout(dir, "test", img); err != nil {
		t.Fatal(err)
	}
	return LayoutPrefix + dir
}

func addLayer(s *imagebuild.Spec, entries ...imagebuild.Entry) {
	s.Layers = append(s.Layers, imagebuild.Layer{Entries: entries})
}

func fileEntry(p string, mode fs.FileMode, uid int, data string) imagebuild.Entry {
	return imagebuild.Entry{Path: p, Mode: mode, UID: uid, GID: uid, Data: []byte(data)}
}

func linkEntry(p, target string) imagebuild.Entry {
	return imagebuild.Entry{Path: p, Mode: fs.ModeSymlink | 0o777, Linkname: target}
}

func dirEntry(p string) imagebuild.Entry {
	return imagebuild.Entry{Path: p, Mode: fs.ModeDir | 0o755}
}

type imageCase struct {
	name   string
	role   contract.Role
	arch   string
	edit   func(*imagebuild.Spec)
	args   []string
	want   []Finding // ID and severity (image findings have no file)
	nearOf string    // the check a near-miss is for
}

func want(id string, sev Severity) []Finding { return []Finding{{ID: id, Severity: sev}} }

// imageCases: for every image check ID, images that trigger exactly that
// finding and a near-miss that triggers nothing (reference: tfcapi-lint
// CLI, "Image checks").
var imageCases = []imageCase{
	{name: "module-present", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.Layers[1].Entries = []imagebuild.Entry{dirEntry("/captf/module"), fileEntry("/captf/module/README.md", 0o644, imageUID, "no module"), dirEntry("/captf/providers")}
	}, want: want(CheckImageModulePresent, SeverityError)},
	{name: "module-present.near", nearOf: CheckImageModulePresent, role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		// Top-level files that are links to regular files inside the module count.
		for i, e := range s.Layers[1].Entries {
			if e.Path == "/captf/module/main.tf" {
				s.Layers[1].Entries[i].Path = "/captf/module/lib/main.tf"
			}
		}
		addLayer(s, linkEntry("/captf/module/main.tf", "lib/main.tf"))
	}},
	{name: "runtime-present", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries[0].Mode = 0o644
	}, want: want(CheckImageRuntimePresent, SeverityError)},
	{name: "runtime-present.missing", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries = []imagebuild.Entry{dirEntry("/captf")}
	}, want: want(CheckImageRuntimePresent, SeverityError)},
	{name: "runtime-present.dangling-link", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries = []imagebuild.Entry{linkEntry("/captf/runtime", "/usr/local/bin/tofu")}
	}, want: want(CheckImageRuntimePresent, SeverityError)},
	{name: "runtime-present.directory", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries = []imagebuild.Entry{dirEntry("/captf/runtime")}
	}, want: want(CheckImageRuntimePresent, SeverityError)},
	{name: "runtime-present.near", nearOf: CheckImageRuntimePresent, role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		// A link to an executable elsewhere in the image, other-executable only.
		s.Layers[0].Entries = []imagebuild.Entry{linkEntry("/captf/runtime", "../usr/local/bin/tofu"), fileEntry("/usr/local/bin/tofu", 0o701, 0, "#!/bin/false\n")}
	}},
	{name: "runtime-version", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries = []imagebuild.Entry{linkEntry("/captf/runtime", "/usr/local/bin/terraform"), fileEntry("/usr/local/bin/terraform", 0o755, 0, "#!/bin/false\n")}
	}, want: want(CheckImageRuntimeVersion, SeverityWarning)},
	{name: "runtime-version.near", nearOf: CheckImageRuntimeVersion, role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.Layers[0].Entries = []imagebuild.Entry{linkEntry("/captf/runtime", "/usr/local/bin/terraform"), fileEntry("/usr/local/bin/terraform", 0o755, 0, "#!/bin/false\n")}
		s.Labels[contract.LabelRuntime] = "terraform"
	}},
	{name: "providers-absent", role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		s.Layers[1].Entries = slices.DeleteFunc(s.Layers[1].Entries, func(e imagebuild.Entry) bool { return e.Path == "/captf/providers" })
	}, want: want(CheckImageProvidersAbsent, SeverityInfo)},
	{name: "providers-absent.near", nearOf: CheckImageProvidersAbsent, role: contract.RoleMachinePool},
	{name: "providers-layout", role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/captf/providers/registry.opentofu.org/hashicorp/README.txt", 0o644, 0, "not a provider"))
	}, want: want(CheckImageProvidersLayout, SeverityError)},
	{name: "providers-layout.near", nearOf: CheckImageProvidersLayout, role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		addLayer(s,
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/index.json", 0o644, 0, "{}"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/5.0.0.json", 0o644, 0, "{}"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.0.0_linux_amd64.zip", 0o644, 0, "zip"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/random/3.6.0/linux_amd64/terraform-provider-random", 0o755, 0, "bin"))
	}},
	{name: "providers-complete", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		addLayer(s,
			fileEntry("/captf/module/providers.tf", 0o644, imageUID, "terraform {\n  required_providers {\n    aws = {\n      source = \"hashicorp/aws\"\n    }\n  }\n}\n"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.0.0_linux_arm64.zip", 0o644, 0, "zip"))
	}, want: want(CheckImageProvidersComplete, SeverityError)},
	{name: "providers-complete.implied", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		// A resource implies its provider (here hashicorp/random).
		addLayer(s, fileEntry("/captf/module/random.tf", 0o644, imageUID, "resource \"random_id\" \"x\" {\n  byte_length = 4\n}\n"))
	}, want: want(CheckImageProvidersComplete, SeverityError)},
	{name: "providers-complete.broken-link", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		addLayer(s, linkEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.0.0_linux_amd64.zip", "/cache/aws.zip"))
	}, want: want(CheckImageProvidersComplete, SeverityError)},
	{name: "providers-complete.near", nearOf: CheckImageProvidersComplete, role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		addLayer(s,
			fileEntry("/captf/module/providers.tf", 0o644, imageUID, "terraform {\n  required_providers {\n    aws = {\n      source = \"hashicorp/aws\"\n    }\n  }\n}\n"),
			fileEntry("/captf/module/random.tf", 0o644, imageUID, "resource \"random_id\" \"x\" {\n  byte_length = 4\n}\n"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.0.0_linux_amd64.zip", 0o644, 0, "zip"),
			fileEntry("/captf/providers/registry.opentofu.org/hashicorp/random/3.6.0/linux_amd64/terraform-provider-random", 0o755, 0, "bin"))
	}},
	{name: "reserved-paths", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/captf/config/terraform.tfvars.json", 0o644, 0, "{}"))
	}, want: want(CheckImageReservedPaths, SeverityError)},
	{name: "reserved-paths.through-a-link", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		addLayer(s, linkEntry("/var/run", "../run"), fileEntry("/run/captf/credentials/token", 0o644, 0, "x"))
	}, want: want(CheckImageReservedPaths, SeverityError)},
	{name: "reserved-paths.near", nearOf: CheckImageReservedPaths, role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		addLayer(s, dirEntry("/captf/work"), fileEntry("/captf/configs/x", 0o644, 0, "x"))
	}},
	{name: "label-role", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelRole] = "cluster"
	}, want: want(CheckImageLabelRole, SeverityError)},
	{name: "label-role.unset", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		delete(s.Labels, contract.LabelRole)
	}, want: want(CheckImageLabelRole, SeverityInfo)},
	{name: "label-role.near", nearOf: CheckImageLabelRole, role: contract.RoleMachinePool},
	{name: "label-contract", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelContract] = "v1alpha2"
	}, want: want(CheckImageLabelContract, SeverityWarning)},
	{name: "label-contract.unset", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		delete(s.Labels, contract.LabelContract)
	}, want: want(CheckImageLabelContract, SeverityInfo)},
	{name: "label-contract.near", nearOf: CheckImageLabelContract, role: contract.RoleCluster},
	{name: "label-capacity", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelCapacity] = `{"cpu": "two"}`
	}, want: want(CheckImageLabelCapacity, SeverityError)},
	{name: "label-capacity.node-info", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelNodeInfo] = `{"architecture": "riscv64"}`
	}, want: want(CheckImageLabelCapacity, SeverityError)},
	{name: "label-capacity.absent", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		delete(s.Labels, contract.LabelCapacity)
		delete(s.Labels, contract.LabelNodeInfo)
	}, want: want(CheckImageLabelCapacity, SeverityInfo)},
	{name: "label-capacity.pool", role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelCapacity] = `{"cpu": "2"}`
	}, want: want(CheckImageLabelCapacity, SeverityInfo)},
	{name: "label-capacity.near", nearOf: CheckImageLabelCapacity, role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Labels[contract.LabelCapacity] = `{"cpu": 4, "memory": "16Gi", "nvidia.com/gpu": "1"}`
		s.Labels[contract.LabelNodeInfo] = `{"operatingSystem": "linux"}`
	}},
	{name: "user-root", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.User = ""
	}, want: want(CheckImageUserRoot, SeverityWarning)},
	{name: "user-root.zero", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.User = "0:0"
	}, want: want(CheckImageUserRoot, SeverityWarning)},
	{name: "user-root.near", nearOf: CheckImageUserRoot, role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.User = "65532:65532"
	}},
	{name: "user-unresolved", role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.User = "captf"
	}, want: want(CheckImageUserUnresolved, SeverityWarning)},
	{name: "user-unresolved.near", nearOf: CheckImageUserUnresolved, role: contract.RoleCluster, edit: func(s *imagebuild.Spec) {
		s.User = "1000"
		addLayer(s, fileEntry("/captf/module/extra.tf", 0o444, 0, "locals {\n  x = 1\n}\n"))
	}},
	{name: "module-readable", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/captf/module/secret.tf", 0o600, 0, "locals {\n  x = 1\n}\n"))
	}, want: want(CheckImageModuleReadable, SeverityWarning)},
	{name: "module-readable.near", nearOf: CheckImageModuleReadable, role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/captf/module/public.tf", 0o644, 0, "locals {\n  x = 1\n}\n"))
	}},
	{name: "module-link", role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/etc/shared.tf", 0o644, 0, "locals {\n  y = 2\n}\n"), linkEntry("/captf/module/shared.tf", "/etc/shared.tf"))
	}, want: want(CheckImageModuleLink, SeverityError)},
	{name: "module-link.near", nearOf: CheckImageModuleLink, role: contract.RoleMachinePool, edit: func(s *imagebuild.Spec) {
		addLayer(s, fileEntry("/captf/module/lib/shared.tf", 0o644, imageUID, "locals {\n  y = 2\n}\n"), linkEntry("/captf/module/shared.tf", "lib/shared.tf"))
	}},
	{name: "entrypoint", role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Entrypoint = []string{"/captf/runtime"}
	}, want: want(CheckImageEntrypoint, SeverityInfo)},
	{name: "entrypoint.near", nearOf: CheckImageEntrypoint, role: contract.RoleMachine, edit: func(s *imagebuild.Spec) {
		s.Env = []string{"TF_IN_AUTOMATION=1"}
		s.WorkingDir = "/captf/module"
	}},
	{name: "platform", role: contract.RoleCluster, arch: "arm64", args: []string{"--platform", "linux/amd64"},
		want: want(CheckImagePlatform, SeverityError)},
	{name: "platform.near", nearOf: CheckImagePlatform, role: contract.RoleCluster, arch: "arm64"},
}

// lintImage runs image lint through Main and returns the exit code and the
// JSON report.
func lintImage(t *testing.T, args ...string) (int, Report, string) {
	t.Helper()
	code, out, stderr := run(append([]string{"image"}, append(args, "--json")...)...)
	var r Report
	if code == ExitOK || code == ExitFindings {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("JSON report: %v\n%s%s", err, out, stderr)
		}
	}
	return code, r, out + stderr
}

func idsAndSeverities(fs []Finding) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, Finding{ID: f.ID, Severity: f.Severity, File: f.File, Line: f.Line})
	}
	return out
}

func TestImageCorpus(t *testing.T) {
	covered := map[string][2]bool{}
	for _, c := range imageCases {
		arch := c.arch
		if arch == "" {
			arch = "amd64"
		}
		spec := baseImageSpec(t, c.role, arch)
		if c.edit != nil {
			c.edit(&spec)
		}
		ref := writeLayout(t, buildImage(t, spec))
		t.Run(c.name, func(t *testing.T) {
			for _, strict := range []bool{false, true} {
				args := append([]string{ref, "--role", string(c.role)}, c.args...)
				if strict {
					args = append(args, "--strict")
				}
				wantCode := (&corpusCase{want: c.want}).wantExit(strict)
				code, r, out := lintImage(t, args...)
				if code != wantCode {
					t.Errorf("strict=%v: exit %d, want %d\n%s", strict, code, wantCode, out)
				}
				wantFindings := c.want
				if wantFindings == nil {
					wantFindings = []Finding{}
				}
				if got := idsAndSeverities(r.Findings); !slices.Equal(got, wantFindings) {
					t.Errorf("findings = %+v, want %+v\n%s", got, wantFindings, out)
				}
				if r.Ref != ref || !strings.HasPrefix(r.Digest, "sha256:") || len(r.Platforms) != 1 || r.FileSet == "" && c.name != "module-present" {
					t.Errorf("ref %q digest %q platforms %v fileSet %q", r.Ref, r.Digest, r.Platforms, r.FileSet)
				}
				t.Logf("%s", out)
			}
		})
		id := "image/" + strings.SplitN(c.name, ".", 2)[0]
		v := covered[id]
		if c.nearOf != "" {
			v[1] = true
			covered[c.nearOf] = v
			continue
		}
		v[0] = true
		if len(c.want) != 1 || c.want[0].ID != id {
			t.Errorf("%s: a trigger must want exactly one %s finding", c.name, id)
		}
		covered[id] = v
	}
	for _, ch := range Checks() {
		if v := covered[ch.ID]; ch.Image && (!v[0] || !v[1]) {
			t.Errorf("check %s: image cases have trigger=%v near-miss=%v; want both", ch.ID, v[0], v[1])
		}
	}
}

// TestImageModuleFindings: the module inside the image is linted, its
// findings name files under /captf/module, and a module that does not parse
// is exit 2.
func TestImageModuleFindings(t *testing.T) {
	spec := baseImageSpec(t, contract.RoleMachine, "amd64")
	addLayer(&spec, fileEntry("/captf/module/extra.tf", 0o644, imageUID, "variable \"size\" {\n  type = string\n}\n"))
	code, r, out := lintImage(t, writeLayout(t, buildImage(t, spec)), "--role", "machine", "--strict")
	wantF := []Finding{{ID: CheckInputUserVariableDefault, Severity: SeverityWarning, File: "/captf/module/extra.tf", Line: 1}}
	if code != ExitFindings || !slices.Equal(idsAndSeverities(r.Findings), wantF) {
		t.Errorf("exit %d, findings %+v; want 1 and %+v\n%s", code, r.Findings, wantF, out)
	}
	addLayer(&spec, fileEntry("/captf/module/broken.tf", 0o644, imageUID, "output \"x\" {\n"))
	if code, _, out := lintImage(t, writeLayout(t, buildImage(t, spec)), "--role", "machine"); code != ExitUnparsable || !strings.Contains(out, "/captf/module/broken.tf") {
		t.Errorf("unparsable module in the image: exit %d\n%s", code, out)
	}
}

func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestImageIndexAndRegistry: a multi-platform index in the loopback
// registry (reached with --insecure) and in an OCI layout; --platform picks
// one, --all-platforms lints each with a [platform] prefix and compares the
// capacity labels; an index without the platform is image/platform.
func TestImageIndexAndRegistry(t *testing.T) {
	amd := baseImageSpec(t, contract.RoleMachine, "amd64")
	arm := baseImageSpec(t, contract.RoleMachine, "arm64")
	arm.Labels[contract.LabelCapacity] = `{"cpu": "4", "memory": "4Gi"}` // differs from amd64
	arm.Labels[contract.LabelNodeInfo] = amd.Labels[contract.LabelNodeInfo]
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, s := range []imagebuild.Spec{amd, arm} {
		p := s.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: buildImage(t, s), Descriptor: v1.Descriptor{Platform: &p}})
	}
	host := startRegistry(t)
	ref := host + "/captf/machine:v1"
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(t.TempDir(), "index")
	p, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{ref, LayoutPrefix + layoutDir} {
		for _, tc := range []struct {
			args      []string
			code      int
			platforms []string
			want      []string // "<id> <severity> <message prefix>"
		}{
			{nil, ExitOK, []string{"linux/amd64"}, nil},
			{[]string{"--insecure"}, ExitOK, []string{"linux/amd64"}, nil},
			{[]string{"--platform", "linux/arm64"}, ExitOK, []string{"linux/arm64"}, nil},
			{[]string{"--platform", "linux/s390x"}, ExitFindings, []string{}, []string{"image/platform error the index has no manifest for linux/s390x"}},
			{[]string{"--all-platforms"}, ExitOK, []string{"linux/amd64", "linux/arm64"}, []string{"image/label-capacity warning the capacity labels differ"}},
			{[]string{"--all-platforms", "--strict"}, ExitFindings, []string{"linux/amd64", "linux/arm64"}, []string{"image/label-capacity warning the capacity labels differ"}},
		} {
			code, rep, out := lintImage(t, append([]string{src, "--role", "machine"}, tc.args...)...)
			var got []string
			for _, f := range rep.Findings {
				got = append(got, fmt.Sprintf("%s %s %s", f.ID, f.Severity, f.Message))
			}
			ok := code == tc.code && slices.Equal(rep.Platforms, tc.platforms) && len(got) == len(tc.want) && rep.Digest == idxDigest.String()
			for i := range tc.want {
				ok = ok && strings.HasPrefix(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("%s %v: exit %d platforms %v digest %s findings %q; want %d %v %s %q\n%s", src, tc.args, code, rep.Platforms, rep.Digest, got, tc.code, tc.platforms, idxDigest, tc.want, out)
			}
		}
	}
	// With --all-platforms every finding carries its platform.
	broken := baseImageSpec(t, contract.RoleCluster, "arm64")
	broken.User = "0"
	p2 := broken.Platform
	idx2 := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: buildImage(t, broken), Descriptor: v1.Descriptor{Platform: &p2}})
	r2, _ := name.ParseReference(host + "/captf/cluster:root")
	if err := remote.WriteIndex(r2, idx2); err != nil {
		t.Fatal(err)
	}
	code, rep, out := lintImage(t, host+"/captf/cluster:root", "--role", "cluster", "--all-platforms", "--insecure")
	if code != ExitOK || len(rep.Findings) != 1 || !strings.HasPrefix(rep.Findings[0].Message, "[linux/arm64] ") {
		t.Errorf("--all-platforms: exit %d findings %+v\n%s", code, rep.Findings, out)
	}
	if code, _, out := lintImage(t, host+"/captf/cluster:root", "--role", "cluster"); code != ExitFindings || !strings.Contains(out, "no manifest for linux/amd64") {
		t.Errorf("default platform missing from the index: exit %d\n%s", code, out)
	}
}

// TestImageExitCodes: an unreachable registry or a missing layout is exit
// 2, an invalid reference exit 3.
func TestImageExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"127.0.0.1:1/captf/none:v1", "--role", "machine"}, ExitUnparsable, "127.0.0.1:1"},
		{[]string{"oci:" + filepath.Join(t.TempDir(), "none"), "--role", "machine"}, ExitUnparsable, "OCI layout"},
		{[]string{"Not A Reference!", "--role", "machine"}, ExitUsage, "invalid image reference"},
		{[]string{"registry.example/x:y", "--role", "machine", "--platform", "linux"}, ExitUsage, "--platform"},
		{[]string{"registry.example/x:y", "--role", "machine", "--platform", "linux/arm64", "--all-platforms"}, ExitUsage, "exclude"},
		{[]string{"registry.example/x:y"}, ExitUsage, "--role is required"},
	} {
		code, _, out := lintImage(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
}

// TestNoopImagesLintCleanStrict is make lint-images inside make test: the
// no-op module images, built as hack/noop-images builds them (with a stand-in
// runtime binary, which keeps the test fast), lint under --strict with no
// error or warning.
func TestNoopImagesLintCleanStrict(t *testing.T) {
	stub := filepath.Join(t.TempDir(), "tofu")
	writeFile(t, stub, "#!/bin/false\n")
	if err := os.Chmod(stub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, role := range contract.Roles() {
		img, err := imagebuild.ModuleImage{
			Role: role, ModuleDir: filepath.Join(repoRoot(t), "modules", "noop", string(role)),
			Runtime: stub, RuntimeName: contract.RuntimeTofu, RuntimeVersion: "1.12.6", EmptyProviders: true,
			Version: "test", Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		}.Build()
		if err != nil {
			t.Fatal(err)
		}
		code, r, out := lintImage(t, writeLayout(t, img), "--role", string(role), "--strict")
		if code != ExitOK || r.Summary.Error+r.Summary.Warning != 0 {
			t.Errorf("%s: exit %d\n%s", role, code, out)
		}
	}
}

// TestLayoutReferenceName: oci:<dir>:<name> picks the image stored under
// that reference name, as make lint-images names the no-op images; an
// unknown name is exit 2.
func TestLayoutReferenceName(t *testing.T) {
	ref := writeLayout(t, buildImage(t, baseImageSpec(t, contract.RoleCluster, "amd64")))
	if code, r, out := lintImage(t, ref+":test", "--role", "cluster", "--strict"); code != ExitOK || len(r.Findings) != 0 {
		t.Errorf("%s:test: exit %d\n%s", ref, code, out)
	}
	if code, _, out := lintImage(t, ref+":other", "--role", "cluster"); code != ExitUnparsable || !strings.Contains(out, `no image named "other"`) {
		t.Errorf("%s:other: exit %d\n%s", ref, code, out)
	}
}
