package docs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The pages, in the book's reading order: Your First Module runs on what
// the Quick Start left (the environment, team-a and the identity).
const (
	quickStartPage  = "docs/book/getting-started/quick-start.md"
	firstModulePage = "docs/book/getting-started/your-first-module.md"
)

// What the pages create, and the checks read back.
const (
	namespace    = "team-a"
	identity     = "aws-prod"
	identityNS   = "captf-system"
	quickCluster = "my-cluster"
	firstCluster = "first-cluster"
	// moduleDir is where Your First Module writes the module, under $HOME.
	moduleDir = "first-module/machine"
	// providerIDPrefix is the module's provider_id up to the Machine's name.
	providerIDPrefix = "first-module:///" + namespace + "/"
)

// secondTerminal maps each command a page tells the reader to run in a
// second terminal, where it keeps running, to the line it prints once the
// reader may go on. A block holding only such a command is not run in the
// working shell: it starts in a process group of its own (the second
// terminal), with the environment the working shell started with (a new
// terminal has none of the working shell's exports), and the test goes on
// once the line shows. At the end the test sends the group SIGINT, which
// is what Ctrl-C in that terminal does, as the pages' last step says.
var secondTerminal = map[string]string{
	"make dev": "The environment and the manager run",
}

// Generous deadlines: a loaded 2-core machine runs three test binaries at
// once. The pages' own waits carry their own timeouts.
const (
	blockTimeout = 30 * time.Minute
	readyTimeout = 30 * time.Minute
	stopTimeout  = 3 * time.Minute
)

// TestGettingStartedPages follows the Quick Start and then Your First
// Module as a reader does, from the repository's root as root: every
// ```sh block in order in one bash session (-euo pipefail, so the first
// failing command fails the test), `make dev` in a second terminal. A
// recorder watches the objects meanwhile; after each page the test checks
// what the page promises:
//
//   - Quick Start: the TerraformCluster and the control-plane
//     TerraformMachine were Ready, the Cluster and the Machine Provisioned,
//     each ran an apply Job and, once the Cluster was deleted, a destroy Job
//     that succeeded, both recorded a Destroyed event, and all of them are
//     gone;
//   - Your First Module: the module it wrote lints clean with no finding
//     at all (tfcapi-lint --json), and the TerraformMachine of the second
//     cluster ran the image built from it, was Ready with the module's
//     provider ID, and was destroyed by its Job when the cluster was
//     deleted;
//
// and, at the end, that no credential value of the identity's Secret shows
// in any status, Job spec or event.
func TestGettingStartedPages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the pages run the local environment, whose kubelet needs root: run this test as root")
	}
	begin := time.Now()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := readerEnv(t, home)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sh := startShell(t, root, env)
	var (
		dev *process
		rec *recorder
		dyn dynamic.Interface
	)
	stopRecorder := func() {
		if rec == nil {
			return
		}
		if t.Failed() {
			t.Logf("what the recorder saw:\n%s", rec.summary())
		}
		for _, err := range rec.stop() {
			t.Error(err)
		}
		rec = nil
	}
	defer stopRecorder()

	for _, page := range []string{quickStartPage, firstModulePage} {
		blocks, err := shBlocks(root, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 {
			t.Fatalf("%s has no sh block", page)
		}
		pageStart := time.Now()
		for _, b := range blocks {
			if ready, ok := secondTerminal[b.commands()]; ok {
				if dev != nil {
					t.Fatalf("%s starts %q again while it runs", b, b.commands())
				}
				dev = startSecondTerminal(t, root, env, b, ready)
				continue
			}
			for cmd := range secondTerminal {
				if strings.Contains(b.text, cmd) {
					t.Fatalf("%s runs %q among other commands: the reader runs it alone, in a second terminal", b, cmd)
				}
			}
			start := time.Now()
			out, err := sh.run(b.text, blockTimeout)
			t.Logf("%s (%.1fs)\n$ %s\n%s", b, time.Since(start).Seconds(), strings.ReplaceAll(strings.TrimSpace(b.text), "\n", "\n$ "), out)
			if err != nil {
				if dev != nil {
					t.Logf("make dev so far:\n%s", tail(dev.out, 60))
				}
				t.Fatalf("%s failed: %v", b, err)
			}
			if rec == nil {
				if kubeconfig := sh.value("KUBECONFIG"); kubeconfig != "" {
					dyn = dynamicClient(t, kubeconfig)
					rec = startRecorder(ctx, dyn, namespace)
				}
			}
		}
		t.Logf("%s: %d blocks in %.1fs", page, len(blocks), time.Since(pageStart).Seconds())
		if rec == nil {
			t.Fatalf("%s never set KUBECONFIG in the shell", page)
		}
		switch page {
		case quickStartPage:
			checkQuickStart(ctx, t, rec, dyn)
		case firstModulePage:
			checkFirstModule(ctx, t, sh, rec, home)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	checkNoCredentials(ctx, t, rec, dyn)
	stopRecorder()

	// The pages end with Ctrl-C in make dev's terminal.
	if dev == nil {
		t.Fatal("no page started make dev")
	}
	if !dev.interrupt(stopTimeout) {
		t.Errorf("make dev did not stop within %s of Ctrl-C; it was killed:\n%s", stopTimeout, tail(dev.out, 30))
	}
	if _, err := os.Stat(filepath.Join(root, "_out", "dev", "env.sh")); err == nil {
		t.Errorf("make dev left _out/dev/env.sh behind")
	}
	t.Logf("wall time: %.1fs", time.Since(begin).Seconds())
}

// readerEnv is the environment of the reader's terminals: the test's own,
// without KUBECONFIG, with home as $HOME (the pages write under ~) and the
// Go and tool caches pinned where they are now, so that nothing is built
// again because $HOME moved.
func readerEnv(t *testing.T, home string) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goenv map[string]string
	if err := json.Unmarshal(out, &goenv); err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KUBECONFIG", "HOME", "XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CACHE_HOME="+cache)
	for k, v := range goenv {
		env = append(env, k+"="+v)
	}
	return env
}

// startSecondTerminal starts block b in its own process group and waits
// for its ready line.
func startSecondTerminal(t *testing.T, root string, env []string, b block, ready string) *process {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "second-terminal.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	start := time.Now()
	p, err := startProcess(root, env, newOutput(log), nil, "bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", b.text)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.interrupt(stopTimeout)
		}
	})
	if _, err := p.waitFor(0, ready, readyTimeout); err != nil {
		t.Fatalf("%s (second terminal): %v\n%s", b, err, tail(p.out, 60))
	}
	t.Logf("%s (second terminal, ready after %.1fs)\n$ %s\n%s", b, time.Since(start).Seconds(), b.commands(), tail(p.out, 10))
	return p
}

func tail(o *output, n int) string {
	all, _ := o.since(0)
	lines := strings.Split(strings.TrimRight(all, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func dynamicClient(t *testing.T, kubeconfig string) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkQuickStart checks the Quick Start's outcome: the cluster came up
// and went again, through Jobs.
func checkQuickStart(ctx context.Context, t *testing.T, rec *recorder, dyn dynamic.Interface) {
	t.Helper()
	if h := rec.get("TerraformClusterIdentity", identity); h == nil || !h.ready {
		t.Errorf("TerraformClusterIdentity %s was never Ready", identity)
	}
	cluster := map[string]string{"cluster.x-k8s.io/cluster-name": quickCluster}
	tc := rec.get("TerraformCluster", quickCluster)
	tms := rec.find("TerraformMachine", cluster)
	if tc == nil || len(tms) != 1 {
		t.Fatalf("saw TerraformCluster %s: %v, %d TerraformMachines of the cluster; want one each", quickCluster, tc != nil, len(tms))
	}
	checkProvisionedAndDestroyed(t, rec, append([]*history{tc}, tms...))
	if c := rec.get("Cluster", quickCluster); c == nil || !c.phases["Provisioned"] {
		t.Errorf("Cluster %s never reached phase Provisioned", quickCluster)
	}
	machines := rec.find("Machine", cluster)
	if len(machines) != 1 || !machines[0].phases["Provisioned"] {
		t.Errorf("want one Machine of %s that reached phase Provisioned, saw %d", quickCluster, len(machines))
	}
	checkDestroyedEvents(ctx, t, dyn, append([]*history{tc}, tms...))
	// All gone, the Cluster as well.
	if _, err := dyn.Resource(clusterGVR).Namespace(namespace).Get(ctx, quickCluster, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Cluster %s is still there after the Quick Start deleted it (%v)", quickCluster, err)
	}
}

// checkProvisionedAndDestroyed checks that each CAPTF object was Ready, ran
// an apply Job and a destroy Job that both succeeded, and is gone.
func checkProvisionedAndDestroyed(t *testing.T, rec *recorder, objs []*history) {
	t.Helper()
	for _, h := range objs {
		if !h.ready {
			t.Errorf("%s %s was never Ready", h.kind, h.name)
		}
		if !h.deleted {
			t.Errorf("%s %s was not deleted", h.kind, h.name)
		}
		jobs := rec.jobsOf(h.kind, h.name)
		for _, op := range []infrav1.Operation{infrav1.OperationApply, infrav1.OperationDestroy} {
			ok := false
			for _, j := range jobs[string(op)] {
				ok = ok || j.succeeded
			}
			if !ok {
				t.Errorf("%s %s: no %s Job was seen succeeding (Jobs seen: %v)", h.kind, h.name, op, jobs)
			}
		}
		for op, js := range jobs {
			for _, j := range js {
				if j.failed {
					t.Errorf("%s %s: %s Job %s failed", h.kind, h.name, op, j.name)
				}
			}
		}
	}
}

// checkDestroyedEvents checks that each object recorded a Destroyed event.
func checkDestroyedEvents(ctx context.Context, t *testing.T, dyn dynamic.Interface, objs []*history) {
	t.Helper()
	evs, err := events(ctx, dyn)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range objs {
		found := false
		for _, e := range evs {
			found = found || e.Reason == infrav1.DestroyedEvent && e.Regarding.Kind == h.kind && e.Regarding.Name == h.name && e.Regarding.Namespace == namespace
		}
		if !found {
			t.Errorf("%s %s recorded no %s event", h.kind, h.name, infrav1.DestroyedEvent)
		}
	}
}

// checkFirstModule checks Your First Module's outcome: the module is
// lint-clean to the last info finding, and its image ran as the
// control-plane TerraformMachine of first-cluster, which returned the
// module's provider ID and was destroyed by a Job of the same image.
func checkFirstModule(ctx context.Context, t *testing.T, sh *shell, rec *recorder, home string) {
	t.Helper()
	out, err := sh.run("tfcapi-lint module "+filepath.Join(home, moduleDir)+" --role machine --strict --json", 5*time.Minute)
	var report lint.Report
	if err != nil || json.Unmarshal([]byte(out), &report) != nil {
		t.Fatalf("tfcapi-lint --json on the page's module: %v\n%s", err, out)
	}
	if len(report.Findings) != 0 || report.Summary != (lint.Summary{}) {
		t.Errorf("the page's module has findings %+v (summary %+v); the page says it has none", report.Findings, report.Summary)
	}

	image := sh.value("IMAGE")
	registry := sh.value("CAPTF_REGISTRY")
	if image == "" || !strings.HasPrefix(image, registry+"/") || strings.Contains(image, "/captf/") {
		t.Fatalf("$IMAGE is %q; want an image of the page's own in the environment's registry %q", image, registry)
	}
	cluster := map[string]string{"cluster.x-k8s.io/cluster-name": firstCluster}
	tms := rec.find("TerraformMachine", cluster)
	machines := rec.find("Machine", cluster)
	if len(tms) != 1 || len(machines) != 1 {
		t.Fatalf("saw %d TerraformMachines and %d Machines of %s; want one each", len(tms), len(machines), firstCluster)
	}
	tm := tms[0]
	if got, _, _ := unstructured.NestedString(tm.last.Object, "spec", "source", "image"); got != image {
		t.Errorf("TerraformMachine %s runs %q, want the page's image %q", tm.name, got, image)
	}
	if got, _, _ := unstructured.NestedString(tm.last.Object, "spec", "providerID"); got != providerIDPrefix+machines[0].name {
		t.Errorf("TerraformMachine %s has provider ID %q, want the module's %q", tm.name, got, providerIDPrefix+machines[0].name)
	}
	checkProvisionedAndDestroyed(t, rec, tms)
	// The Jobs ran the page's image (by tag, or pinned to its digest).
	repo, _, _ := strings.Cut(strings.TrimPrefix(image, registry+"/"), ":")
	for op, js := range rec.jobsOf(tm.kind, tm.name) {
		for _, j := range js {
			containers, _, _ := unstructured.NestedSlice(j.last.Object, "spec", "template", "spec", "containers")
			ran := ""
			for _, c := range containers {
				if c, ok := c.(map[string]any); ok && c["name"] == "source" {
					ran, _ = c["image"].(string)
				}
			}
			if !strings.HasPrefix(ran, registry+"/"+repo+":") && !strings.HasPrefix(ran, registry+"/"+repo+"@") {
				t.Errorf("%s Job %s ran %q, not the page's image %s", op, j.name, ran, image)
			}
		}
	}
}

// checkNoCredentials checks that no value of the identity's Secret, as the
// pages left it, shows in any status, Job spec or event.
func checkNoCredentials(ctx context.Context, t *testing.T, rec *recorder, dyn dynamic.Interface) {
	t.Helper()
	secret, err := dyn.Resource(secretsGVR).Namespace(identityNS).Get(ctx, identity, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the identity's Secret: %v", err)
	}
	data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
	var values []string
	for key, b64 := range data {
		v, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("Secret %s/%s key %s: %v", identityNS, identity, key, err)
		}
		if len(v) < 8 {
			t.Fatalf("Secret %s/%s key %s holds %q, too short to look for", identityNS, identity, key, v)
		}
		values = append(values, string(v))
	}
	if len(values) == 0 {
		t.Fatalf("Secret %s/%s holds no credential", identityNS, identity)
	}
	texts := rec.texts()
	evs, err := events(ctx, dyn)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		texts = append(texts, "event "+e.String()+" "+e.Action)
	}
	for _, v := range values {
		for _, s := range texts {
			if strings.Contains(s, v) {
				t.Errorf("a credential of the identity shows in %s", s)
			}
		}
	}
	t.Logf("no credential value in %d statuses, Job specs and events", len(texts))
}
