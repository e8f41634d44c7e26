package imagebuild

import (
	"bufio"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// instruction is one Containerfile instruction: its keyword (upper case),
// its flags (--from=mirror…) and its arguments, continuation lines joined.
type instruction struct {
	line    int
	keyword string
	flags   map[string]string
	args    []string
	raw     string
}

// stage is the instructions from one FROM to the next.
type stage struct {
	name string
	from string
	ins  []instruction
}

// parseContainerfile reads the instructions of a Containerfile, grouped by
// stage; the ARGs before the first FROM are returned apart.
func parseContainerfile(t *testing.T, file string) (globalArgs map[string]string, stages []stage) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	globalArgs = map[string]string{}
	var logical []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		logical = append(logical, parseInstruction(start, cur.String()))
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: the last instruction ends with a line continuation", file)
	}
	for _, in := range logical {
		switch {
		case in.keyword == "FROM":
			s := stage{from: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "AS") {
				s.name = in.args[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.keyword == "ARG":
			k, v, _ := strings.Cut(in.args[0], "=")
			globalArgs[k] = strings.Trim(v, `"`)
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before the first FROM", file, in.line, in.keyword)
		default:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return globalArgs, stages
}

func parseInstruction(line int, s string) instruction {
	kw, rest, _ := strings.Cut(s, " ")
	in := instruction{line: line, keyword: strings.ToUpper(kw), flags: map[string]string{}, raw: strings.TrimSpace(rest)}
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok && strings.HasPrefix(k, "--") && len(in.args) == 0 {
			in.flags[strings.TrimPrefix(k, "--")] = v
			continue
		}
		in.args = append(in.args, f)
	}
	return in
}

// labels reads a stage's LABEL key="value" pairs.
func (s stage) labels(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, in := range s.ins {
		if in.keyword != "LABEL" {
			continue
		}
		rest := in.raw
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
			k, after, ok := strings.Cut(rest, "=")
			if !ok {
				t.Fatalf("line %d: LABEL %q is not key=value", in.line, rest)
			}
			var v string
			if strings.HasPrefix(after, `"`) {
				end := strings.Index(after[1:], `"`)
				if end < 0 {
					t.Fatalf("line %d: unterminated label value", in.line)
				}
				v, rest = after[1:end+1], after[end+2:]
			} else {
				v, rest, _ = strings.Cut(after, " ")
			}
			out[k] = v
		}
	}
	return out
}

// copies returns the destinations of the stage's COPY instructions, with
// each one's --from stage ("" for the build context) and sources.
func (s stage) copies() map[string]instruction {
	out := map[string]instruction{}
	for _, in := range s.ins {
		if in.keyword == "COPY" && len(in.args) >= 2 {
			out[path.Clean(in.args[len(in.args)-1])] = in
		}
	}
	return out
}

// runs returns the stage's RUN commands, one shell command per && part.
func (s stage) runs() []string {
	var out []string
	for _, in := range s.ins {
		if in.keyword == "RUN" {
			for _, c := range strings.Split(in.raw, "&&") {
				out = append(out, strings.Join(strings.Fields(c), " "))
			}
		}
	}
	return out
}

func (s stage) last(keyword string) (instruction, bool) {
	for i := len(s.ins) - 1; i >= 0; i-- {
		if s.ins[i].keyword == keyword {
			return s.ins[i], true
		}
	}
	return instruction{}, false
}

// pinnedOpenTofu is the OpenTofu version hack/tools pins.
func pinnedOpenTofu(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "hack", "tools", "opentofu", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mf.Require {
		if r.Mod.Path == "github.com/opentofu/opentofu" {
			return strings.TrimPrefix(r.Mod.Version, "v")
		}
	}
	t.Fatal("hack/tools/opentofu pins no github.com/opentofu/opentofu")
	return ""
}

// TestContainerfilesMatchTheImageContract reads modules/Containerfile.* and
// checks that the image each one builds has the Image Contract's fixed
// paths, user and labels: the same facts (internal/contract) that
// ModuleImage builds images from and tfcapi-lint checks images against, so
// a drift between the reference Containerfiles and the image builder fails
// here (Image Contract, "Fixed paths", "OCI labels", "User", "Provider
// mirror layout").
func TestContainerfilesMatchTheImageContract(t *testing.T) {
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// What the image builder produces for a module image with every
	// optional label set: its label keys and its user.
	built, err := ModuleImage{
		Role: contract.RoleMachine, ModuleDir: repoModule(t, contract.RoleMachine),
		Runtime: filepath.Join(repoModule(t, contract.RoleMachine), "main.tf"), RuntimeName: contract.RuntimeTofu,
		RuntimeVersion: "1", Source: "s", Revision: "r", Version: "v",
	}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	builderLabels := slices.Sorted(maps.Keys(built.Labels))
	uid := strconv.Itoa(ImageUser)

	files, err := filepath.Glob(filepath.Join(root, "modules", "Containerfile.*"))
	if err != nil {
		t.Fatal(err)
	}
	runtimes := map[string]string{"Containerfile.opentofu": contract.RuntimeTofu, "Containerfile.terraform": contract.RuntimeTerraform}
	var seen []string
	for _, file := range files {
		base := filepath.Base(file)
		seen = append(seen, base)
		t.Run(base, func(t *testing.T) {
			runtimeName, ok := runtimes[base]
			if !ok {
				t.Fatalf("%s: no runtime is known for this Containerfile", base)
			}
			args, stages := parseContainerfile(t, file)
			if len(stages) < 2 {
				t.Fatalf("%d stages, want a provider mirror stage and a final stage", len(stages))
			}
			final := stages[len(stages)-1]
			copies := final.copies()
			runs := final.runs()

			// Fixed paths: the module from the build context, the mirror
			// from the mirror stage, the runtime copied or linked.
			if in, ok := copies[contract.ModuleDir]; !ok || in.flags["from"] != "" || !slices.Equal(in.args[:len(in.args)-1], []string{"."}) {
				t.Errorf("the final stage does not COPY the module directory (.) to %s", contract.ModuleDir)
			}
			mirror, ok := copies[contract.ProvidersDir]
			if !ok || mirror.flags["from"] == "" {
				t.Errorf("the final stage does not COPY --from=<mirror stage> to %s", contract.ProvidersDir)
			} else {
				var from *stage
				for i := range stages {
					if stages[i].name == mirror.flags["from"] {
						from = &stages[i]
					}
				}
				if from == nil {
					t.Errorf("COPY --from=%s: no such stage", mirror.flags["from"])
				} else {
					// The mirror stage creates the mirror and fills it
					// with providers mirror, after get (Provider mirror
					// layout).
					cmds := strings.Join(from.runs(), "\n")
					for _, want := range []string{" get", "mkdir -p " + contract.ProvidersDir, " providers mirror ", " " + contract.ProvidersDir} {
						if !strings.Contains(cmds, want) {
							t.Errorf("the mirror stage's RUN lacks %q:\n%s", strings.TrimSpace(want), cmds)
						}
					}
				}
			}
			rtCopied := copies[contract.RuntimePath].flags["from"] != ""
			rtLinked := slices.ContainsFunc(runs, func(c string) bool {
				return strings.HasPrefix(c, "ln -s ") && strings.HasSuffix(c, " "+contract.RuntimePath)
			})
			if rtCopied == rtLinked {
				t.Errorf("the final stage must either COPY --from a stage or ln -s the runtime to %s (copied %v, linked %v)", contract.RuntimePath, rtCopied, rtLinked)
			}
			// Nothing under the paths the runner mounts its own content at.
			for dest := range copies {
				for _, r := range lint.ReservedPaths() {
					if dest == r || strings.HasPrefix(dest, r+"/") {
						t.Errorf("COPY to %s, under the reserved path %s", dest, r)
					}
				}
			}

			// User: the builder's non-root UID, owning /captf so that it
			// reads the module and the mirror.
			if in, ok := final.last("USER"); !ok || len(in.args) != 1 || in.args[0] != uid {
				t.Errorf("USER %v, want %s (imagebuild.ImageUser)", in.args, uid)
			}
			if !slices.Contains(runs, "chown -R "+uid+":"+uid+" /captf") {
				t.Errorf("no RUN chown -R %s:%s /captf in %q", uid, uid, runs)
			}
			if !slices.ContainsFunc(runs, func(c string) bool { return strings.Contains(c, "adduser") && strings.Contains(c, "-u "+uid) }) {
				t.Errorf("no user %s is added in %q", uid, runs)
			}

			// Labels: the builder's keys, with the contract's values.
			labels := final.labels(t)
			if got := slices.Sorted(maps.Keys(labels)); !slices.Equal(got, builderLabels) {
				t.Errorf("labels %v, want the image builder's %v", got, builderLabels)
			}
			want := map[string]string{
				contract.LabelContract:       contract.Version,
				contract.LabelRole:           "${ROLE}",
				contract.LabelRuntime:        runtimeName,
				contract.LabelRuntimeVersion: "${RUNTIME_VERSION}",
				contract.LabelSource:         "${IMAGE_SOURCE}",
				contract.LabelRevision:       "${IMAGE_REVISION}",
				contract.LabelVersion:        "${IMAGE_VERSION}",
			}
			for k, v := range want {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, labels[k], v)
				}
			}
			role := ""
			for _, in := range final.ins {
				if in.keyword == "ARG" {
					if k, v, ok := strings.Cut(in.args[0], "="); ok && k == "ROLE" {
						role = v
					}
				}
			}
			if _, err := contract.ParseRole(role); err != nil {
				t.Errorf("ARG ROLE default %q: %v", role, err)
			}
			if _, ok := args["RUNTIME_VERSION"]; !ok {
				t.Errorf("no global ARG RUNTIME_VERSION")
			}
			if runtimeName == contract.RuntimeTofu {
				if pinned := pinnedOpenTofu(t, root); args["RUNTIME_VERSION"] != pinned {
					t.Errorf("ARG RUNTIME_VERSION=%s, want the pinned OpenTofu %s", args["RUNTIME_VERSION"], pinned)
				}
			}
		})
	}
	if !slices.Equal(seen, []string{"Containerfile.opentofu", "Containerfile.terraform"}) {
		t.Errorf("modules/ holds %v, want Containerfile.opentofu and Containerfile.terraform", seen)
	}
}
