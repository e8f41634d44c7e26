package kit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

// RuntimeBinaryEnv names the environment variable that gives the runtime
// binary when --runtime-binary is not set.
const RuntimeBinaryEnv = "TFCAPI_LINT_RUNTIME_BINARY"

// DefaultTimeout bounds init and test together.
const DefaultTimeout = 5 * time.Minute

// testDir is the directory of the module copy the harness is written to;
// tofu test is pointed at it and at the harness alone, so the author's own
// tests do not run.
const testDir = "captf-contract-test"

// TestOptions configure a contract test.
type TestOptions struct {
	// Role is the role the module implements.
	Role contract.Role
	// Runtime is contract.RuntimeTofu (default) or contract.RuntimeTerraform.
	Runtime string
	// Binary is the runtime binary; "" means $TFCAPI_LINT_RUNTIME_BINARY,
	// else the runtime's name looked up in PATH.
	Binary string
	// PluginDirs are provider directories (a provider mirror, as
	// tofu providers mirror writes it) init installs from. Init never
	// reaches a registry.
	PluginDirs []string
	// ClusterOutputs is captf_cluster_outputs (nil: DefaultClusterOutputs).
	ClusterOutputs json.RawMessage
	// Variables is a JSON object of user variables, as spec.variables.
	Variables []byte
	// Timeout bounds init and test together (0: DefaultTimeout).
	Timeout time.Duration
}

// ScenarioResult is the outcome of one scenario.
type ScenarioResult struct {
	Scenario string
	// Failures are empty when the scenario passed.
	Failures []Failure
}

// TestResult is the outcome of a contract test.
type TestResult struct {
	Role      contract.Role
	Scenarios []ScenarioResult
}

// Failures returns every failure of every scenario.
func (r *TestResult) Failures() []Failure {
	var fs []Failure
	for _, s := range r.Scenarios {
		fs = append(fs, s.Failures...)
	}
	return fs
}

// RuntimeError is a contract test that could not run: an unreadable
// module, a missing runtime, init failing (a provider that is not in the
// plugin directories among the causes), or a runtime that crashed or timed
// out. tfcapi-lint exits 2 on it.
type RuntimeError struct{ Err error }

func (e *RuntimeError) Error() string { return e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

func runtimeErrorf(format string, args ...any) error {
	return &RuntimeError{Err: fmt.Errorf(format, args...)}
}

// Prepare reads the module and returns its harness options: the mocked
// providers, the overridden remote states, the rendered user variables.
func Prepare(dir string, o TestOptions) (HarnessOptions, *moduleFacts, error) {
	facts, err := scanModule(dir)
	if err != nil {
		return HarnessOptions{}, nil, &RuntimeError{Err: err}
	}
	vars, err := inputs.ResolveVariables(o.Role, nil, o.Variables)
	if err != nil {
		return HarnessOptions{}, nil, fmt.Errorf("the user variables: %w", err)
	}
	if o.ClusterOutputs != nil {
		if err := inputs.CheckClusterOutputs(o.ClusterOutputs); err != nil {
			return HarnessOptions{}, nil, err
		}
	}
	return HarnessOptions{
		ClusterOutputs: o.ClusterOutputs, Variables: vars,
		Providers: facts.Providers, RemoteStates: facts.RemoteStates,
	}, facts, nil
}

// WriteHarness writes the module's harness to dir/HarnessFile, replacing
// an earlier one, and returns its path.
func WriteHarness(dir string, o TestOptions) (string, error) {
	ho, _, err := Prepare(dir, o)
	if err != nil {
		return "", err
	}
	b, err := Harness(o.Role, ho)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, HarnessFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	return p, os.WriteFile(p, b, 0o644)
}

// Test runs the contract test of the module in dir: it copies the module
// to a temporary directory (dir is never written), adds the harness, runs
// init (from the plugin directories only) and the runtime's test command
// with -json -verbose, reads each run's outputs from the printed state and
// decodes them with the manager's decoder for the role.
func Test(ctx context.Context, dir string, o TestOptions) (*TestResult, error) {
	if o.Runtime == "" {
		o.Runtime = contract.RuntimeTofu
	}
	if o.Runtime != contract.RuntimeTofu && o.Runtime != contract.RuntimeTerraform {
		return nil, fmt.Errorf("runtime %q: want %s or %s", o.Runtime, contract.RuntimeTofu, contract.RuntimeTerraform)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	bin, err := findBinary(o)
	if err != nil {
		return nil, err
	}
	ho, facts, err := Prepare(dir, o)
	if err != nil {
		return nil, err
	}
	harness, err := Harness(o.Role, ho)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "tfcapi-lint-test-")
	if err != nil {
		return nil, &RuntimeError{Err: err}
	}
	defer os.RemoveAll(work)
	module := filepath.Join(work, "module")
	if err := copyModule(dir, module); err != nil {
		return nil, runtimeErrorf("copy the module: %w", err)
	}
	harnessPath := filepath.Join(testDir, "captf_contract.tftest.hcl")
	if err := os.MkdirAll(filepath.Join(module, testDir), 0o755); err != nil {
		return nil, &RuntimeError{Err: err}
	}
	if err := os.WriteFile(filepath.Join(module, harnessPath), harness, 0o644); err != nil {
		return nil, &RuntimeError{Err: err}
	}
	env, err := runtimeEnv(work)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	secrets := [][]byte{SampleBootstrapData, []byte(base64.StdEncoding.EncodeToString(SampleBootstrapData))}
	pluginDirs := o.PluginDirs
	if len(pluginDirs) == 0 {
		// An empty plugin directory keeps init off the network: a module
		// that needs a provider fails init with a clear message instead.
		empty := filepath.Join(work, "no-providers")
		if err := os.Mkdir(empty, 0o755); err != nil {
			return nil, &RuntimeError{Err: err}
		}
		pluginDirs = []string{empty}
	}
	initArgs := []string{"init", "-backend=false", "-input=false", "-no-color"}
	for _, d := range pluginDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, &RuntimeError{Err: err}
		}
		initArgs = append(initArgs, "-plugin-dir="+abs)
	}
	if out, err := run(ctx, bin, module, env, initArgs...); err != nil {
		msg := redact(lastLines(out, 20), secrets)
		if len(facts.Providers) > 0 {
			msg += fmt.Sprintf("\n(the module needs the provider(s) %s: the harness mocks them, but init installs every required provider and the test reads their schemas, and the contract test never reaches a registry: pass --plugin-dir with a mirror written by `%s providers mirror`)",
				strings.Join(facts.Providers, ", "), o.Runtime)
		}
		return nil, runtimeErrorf("%s init failed: %v\n%s", o.Runtime, err, msg)
	}
	out, err := run(ctx, bin, module, env, "test", "-json", "-verbose", "-no-color",
		"-test-directory="+testDir, "-filter="+filepath.ToSlash(harnessPath))
	if ctx.Err() != nil {
		return nil, runtimeErrorf("%s test did not finish within %s", o.Runtime, o.Timeout)
	}
	runs, perr := parseStream(out)
	if perr != nil {
		detail := ""
		if err != nil {
			detail = err.Error() + "\n"
		}
		return nil, runtimeErrorf("%s test printed no run (the contract test needs OpenTofu 1.8 or later, or Terraform 1.7 or later: a test command with mock providers and -json -verbose): %s%s",
			o.Runtime, detail, redact(lastLines(out, 20), secrets))
	}
	res := &TestResult{Role: o.Role}
	var undeclared []string
	for _, name := range o.Role.OutputNames() {
		if !slices.Contains(facts.Outputs, name) {
			undeclared = append(undeclared, name)
		}
	}
	var fileDiags []string
	if r := runs[""]; r != nil {
		fileDiags = r.diags
	}
	for _, s := range Scenarios(o.Role, o.ClusterOutputs) {
		sr := ScenarioResult{Scenario: s.Name}
		r, ok := runs[s.Run]
		switch {
		case ok && r.status == "skip":
			sr.Failures = []Failure{{Message: "the run was skipped, after an earlier run failed"}}
		case !ok || r.state == nil && r.status == "":
			msg := "the run did not take place"
			if len(fileDiags) > 0 {
				msg += ": " + strings.Join(fileDiags, "; ")
			}
			sr.Failures = []Failure{{Message: redact(msg, secrets)}}
		case r.state == nil:
			msg := "the apply failed"
			if r.status != "" {
				msg += " (" + r.status + ")"
			}
			if len(r.diags) > 0 {
				msg += ": " + strings.Join(r.diags, "; ")
			}
			sr.Failures = []Failure{{Message: redact(msg, secrets)}}
		default:
			sr.Failures = s.check(r.outputs, undeclared)
		}
		for i := range sr.Failures {
			sr.Failures[i].Scenario = s.Name
		}
		res.Scenarios = append(res.Scenarios, sr)
	}
	return res, nil
}

// findBinary returns the runtime binary to run.
func findBinary(o TestOptions) (string, error) {
	bin := o.Binary
	if bin == "" {
		bin = os.Getenv(RuntimeBinaryEnv)
	}
	if bin == "" {
		p, err := exec.LookPath(o.Runtime)
		if err != nil {
			return "", runtimeErrorf("no %s binary in PATH: install it, or pass --runtime-binary (or set %s)", o.Runtime, RuntimeBinaryEnv)
		}
		return p, nil
	}
	if _, err := os.Stat(bin); err != nil {
		return "", runtimeErrorf("runtime binary: %w", err)
	}
	return bin, nil
}

// runtimeEnv is the environment of the runtime: the caller's, without any
// TF_* setting that could reach a registry, a cache or a cloud, plus an
// empty CLI configuration and no version check.
func runtimeEnv(work string) ([]string, error) {
	cfg := filepath.Join(work, "cli.tfrc")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		return nil, &RuntimeError{Err: err}
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_") || strings.HasPrefix(kv, "TOFU_") || strings.HasPrefix(kv, "CHECKPOINT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TF_CLI_CONFIG_FILE="+cfg, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_DATA_DIR="+filepath.Join(work, "data")), nil
}

func run(ctx context.Context, bin, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// copyModule copies the module directory, leaving out the runtime's data
// directory and any state file.
func copyModule(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		name := d.Name()
		switch {
		case d.IsDir() && (name == ".terraform" || name == ".git") && rel != ".":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case strings.HasSuffix(name, ".tfstate") || strings.HasSuffix(name, ".tfstate.backup") || name == ".terraform.lock.hcl":
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case !d.Type().IsRegular():
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// runOutcome is what the test stream says about one run block.
type runOutcome struct {
	status  string
	diags   []string
	state   json.RawMessage
	outputs contract.RawOutputs
}

// message is one line of the runtime's -json test stream (OpenTofu's and
// Terraform's machine-readable UI).
type message struct {
	Type    string `json:"type"`
	TestRun string `json:"@testrun"`
	Run     *struct {
		Status string `json:"status"`
	} `json:"test_run"`
	State      json.RawMessage `json:"test_state"`
	Diagnostic *struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
	} `json:"diagnostic"`
}

// stateOutputs is the part of a printed state holding the root outputs:
// under values in OpenTofu's stream (jsonstate, as show -json prints
// state), at the top in Terraform's (jsonformat).
type stateOutputs struct {
	Outputs map[string]struct {
		Value json.RawMessage `json:"value"`
	} `json:"outputs"`
	Values *struct {
		Outputs map[string]struct {
			Value json.RawMessage `json:"value"`
		} `json:"outputs"`
	} `json:"values"`
}

// parseStream reads the test stream into one outcome per run block. The
// "" key collects diagnostics that belong to no run.
func parseStream(out []byte) (map[string]*runOutcome, error) {
	runs := map[string]*runOutcome{}
	get := func(name string) *runOutcome {
		r, ok := runs[name]
		if !ok {
			r = &runOutcome{}
			runs[name] = r
		}
		return r
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			continue
		}
		switch m.Type {
		case "test_run":
			if m.TestRun != "" && m.Run != nil && m.Run.Status != "" {
				get(m.TestRun).status = m.Run.Status
			}
		case "test_state":
			if m.TestRun == "" {
				continue
			}
			var so stateOutputs
			if err := json.Unmarshal(m.State, &so); err != nil {
				return nil, fmt.Errorf("run %q: the printed state is unreadable: %w", m.TestRun, err)
			}
			outs := so.Outputs
			if outs == nil && so.Values != nil {
				outs = so.Values.Outputs
			}
			r := get(m.TestRun)
			r.state = m.State
			r.outputs = contract.RawOutputs{}
			for name, o := range outs {
				r.outputs[name] = o.Value
			}
		case "diagnostic":
			if m.Diagnostic == nil || m.Diagnostic.Severity != "error" {
				continue
			}
			d := m.Diagnostic.Summary
			if m.Diagnostic.Detail != "" {
				d += ": " + strings.Join(strings.Fields(m.Diagnostic.Detail), " ")
			}
			r := get(m.TestRun)
			r.diags = append(r.diags, d)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// A run with an error status has no usable state, even if one was
	// printed.
	for _, r := range runs {
		if r.status == "error" || r.status == "fail" {
			r.state = nil
		}
	}
	if len(runs) == 0 || len(runs) == 1 && runs[""] != nil && runs[""].status == "" && len(runs[""].diags) == 0 {
		return nil, errors.New("no run in the stream")
	}
	return runs, nil
}

// redact replaces every secret in s.
func redact(s string, secrets [][]byte) string {
	for _, sec := range secrets {
		if len(sec) > 0 {
			s = strings.ReplaceAll(s, string(sec), "(sensitive)")
		}
	}
	return s
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
