//go:build move

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
)

// moveNamespace is the move scenario's fault namespace: its source manager
// is its own.
const moveNamespace = 47

// captfInventoryVersion is the version CAPTF's Provider object records in
// both inventories.
const captfInventoryVersion = "v0.1.0"

// TestClusterctlMoveBetweenEnvironments moves a cluster between two local
// environments with Cluster API's own clusterctl move library, the way
// clusterctl move runs it (make move). The shared environment is the
// source; the target is a second control plane with Cluster API, a
// kubelet and a CAPTF manager of its own, pulling from the source's
// registry. Both carry the provider inventory clusterctl init leaves.
//
// Lifecycle Walkthroughs (clusterctl move), the move runbook and Terraform
// State promise:
//   - clusterctl.cluster.x-k8s.io/block-move holds the move while a Job
//     runs: nothing reaches the target before the source's Job finished;
//   - on the target every object reaches Ready with no apply Job: the
//     latches are rebuilt from the state and the Secrets that moved;
//   - the source keeps no Terraform* object and no CAPTF Secret of the
//     moved cluster;
//   - a spec change on the target applies normally, and deleting the
//     cluster on the target destroys it through the state that moved.
//
// Jobs are counted from watches on both sides.
func TestClusterctlMoveBetweenEnvironments(t *testing.T) {
	t0 := time.Now()
	b, ctx := startFaultScenario(t, moveNamespace)
	src := b.w
	// A bootstrap provider's data Secrets are owned by its config objects,
	// which move; this bring-up writes them by hand, so it labels them.
	for _, m := range b.machines {
		s := &corev1.Secret{}
		if err := src.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: m + "-bootstrap"}, s); err != nil {
			t.Fatal(err)
		}
		base := s.DeepCopy()
		s.Labels[infrav1.MoveLabel] = ""
		if err := src.c.Patch(ctx, s, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}

	// The target starts while the source brings the cluster up.
	type started struct {
		w   *world
		err error
	}
	targetCh := make(chan started, 1)
	go func() {
		tw, err := startMoveTarget(t, ctx)
		targetCh <- started{tw, err}
	}()
	b.waitConverged(ctx, 10*time.Minute)
	broughtUp := time.Since(t0)
	ts := <-targetCh
	if ts.err != nil {
		t.Fatalf("the target environment: %v", ts.err)
	}
	tgt := ts.w
	targetUp := time.Since(t0)

	// The provider inventory on both sides; the identity's Secret copied
	// by hand (runbook step 1).
	capiVersion, err := capi.ModuleVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*env.Env{src.e, tgt.e} {
		if err := framework.InstallProviderInventory(ctx, e.Config, e.KubeconfigPath,
			framework.InventoryProviders(capiVersion, captfInventoryVersion)); err != nil {
			t.Fatal(err)
		}
	}
	idSecret := &corev1.Secret{}
	if err := src.c.Get(ctx, client.ObjectKey{Namespace: "captf-system", Name: src.identity}, idSecret); err != nil {
		t.Fatal(err)
	}
	tgt.create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: idSecret.Namespace, Name: idSecret.Name},
		Type:       idSecret.Type, Data: idSecret.Data,
	})

	// What the source knows before the move.
	tcKey := client.ObjectKey{Namespace: b.ns, Name: b.name}
	srcTC := &infrav1.TerraformCluster{}
	if err := src.c.Get(ctx, tcKey, srcTC); err != nil {
		t.Fatal(err)
	}
	srcState, err := state.Read(ctx, src.c, b.ns, srcTC.Status.StateSecretSuffix, state.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	srcJobs := len(b.timeline.Jobs())
	ttl, err := framework.StartTimeline(ctx, tgt.e.Config, scheme(), b.ns)
	if err != nil {
		t.Fatal(err)
	}

	// A Job runs on the source when the move starts: a change of the
	// cluster's variables starts an apply.
	setTags(t, ctx, src.c, tcKey, `{"moved":"before"}`)
	held := newMoveHold(b.timeline, "TerraformCluster/"+b.name, srcJobs)
	if !held.waitJob(ctx, 3*time.Minute) {
		src.dump(ctx)
		t.Fatal("the variables change started no apply Job on the source")
	}
	src.eventually(ctx, time.Minute, "the move block on the TerraformCluster", func() (bool, string) {
		tc := &infrav1.TerraformCluster{}
		if err := src.c.Get(ctx, tcKey, tc); err != nil {
			return false, err.Error()
		}
		_, blocked := tc.Annotations[infrav1.BlockMoveAnnotation]
		return blocked, "no block yet"
	})
	t.Logf("Job %s runs on the source; clusterctl move starts", held.job)

	tMove := time.Now()
	moveDone := make(chan error, 1)
	go func() {
		c, err := clusterctl.New(ctx, "")
		if err != nil {
			moveDone <- err
			return
		}
		moveDone <- c.Move(ctx, clusterctl.MoveOptions{
			FromKubeconfig: clusterctl.Kubeconfig{Path: src.e.KubeconfigPath},
			ToKubeconfig:   clusterctl.Kubeconfig{Path: tgt.e.KubeconfigPath},
			Namespace:      b.ns,
		})
	}()
	if err := held.watch(ctx, src.c, tgt.c, tcKey, moveDone); err != nil {
		src.dump(ctx)
		t.Fatal(err)
	}
	moved := time.Since(tMove)
	t.Logf("moved in %v; held %v by the block while Job %s ran", moved.Round(time.Millisecond), held.heldFor.Round(time.Millisecond), held.job)
	if held.heldFor == 0 {
		t.Error("the move was never seen held: the source's Job finished before the Cluster was paused")
	}

	// The source keeps nothing of the moved cluster's.
	checkSourceEmpty(t, ctx, src.c, b.ns)
	b.stop()

	// The target converges with no apply Job.
	tb := &faultBringUp{w: tgt, ns: b.ns, name: b.name, machines: b.machines, timeline: ttl}
	tgt.eventually(ctx, 5*time.Minute, "the moved cluster to be Ready on the target", func() (bool, string) {
		return movedReady(ctx, tb)
	})
	converged := time.Since(tMove)
	// Settled: nothing more is due (a drift check may still run).
	time.Sleep(5 * time.Second)
	ops := jobOps(ttl)
	for _, j := range ttl.Jobs() {
		if j.Op != "drift" {
			t.Errorf("the target ran a %s Job %s of %s after the move, want none", j.Op, j.Name, j.Owner)
		}
	}
	t.Logf("target after the move: Jobs %v", ops)
	tgtTC := &infrav1.TerraformCluster{}
	if err := tgt.c.Get(ctx, tcKey, tgtTC); err != nil {
		t.Fatal(err)
	}
	tgtState, err := state.Read(ctx, tgt.c, b.ns, tgtTC.Status.StateSecretSuffix, state.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if tgtState.Lineage != srcState.Lineage || tgtState.Serial <= srcState.Serial {
		t.Errorf("target state lineage %s serial %d, want the source's lineage %s past serial %d", tgtState.Lineage, tgtState.Serial, srcState.Lineage, srcState.Serial)
	}

	// A spec change on the target applies normally.
	before := len(ttl.Jobs())
	setTags(t, ctx, tgt.c, tcKey, `{"moved":"after"}`)
	tgt.eventually(ctx, 5*time.Minute, "the target to apply the change", func() (bool, string) {
		jobs := ttl.Jobs()
		for _, j := range jobs[before:] {
			if j.Owner == "TerraformCluster/"+b.name && j.Op == "apply" && j.Succeeded {
				tc := &infrav1.TerraformCluster{}
				if err := tgt.c.Get(ctx, tcKey, tc); err != nil {
					return false, err.Error()
				}
				ok, why := ready(tc)
				return ok && tc.Status.LastRun != nil && tc.Status.LastRun.Job == j.Name, why
			}
		}
		return false, "no apply yet"
	})
	applied := time.Since(tMove)

	// Deleting the cluster on the target destroys it through its moved
	// state.
	cl := &clusterv1.Cluster{}
	if err := tgt.c.Get(ctx, tcKey, cl); err != nil {
		t.Fatal(err)
	}
	if err := tgt.c.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	tgt.eventually(ctx, 5*time.Minute, "the moved cluster to be gone from the target", func() (bool, string) {
		var tcs infrav1.TerraformClusterList
		var tms infrav1.TerraformMachineList
		if err := tgt.c.List(ctx, &tcs, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		if err := tgt.c.List(ctx, &tms, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		return len(tcs.Items)+len(tms.Items) == 0, fmt.Sprintf("%d TerraformClusters, %d TerraformMachines left", len(tcs.Items), len(tms.Items))
	})
	destroys := map[string]int{}
	for _, j := range ttl.Jobs() {
		if j.Op == "destroy" {
			if !j.Succeeded {
				t.Errorf("destroy Job %s of %s did not succeed", j.Name, j.Owner)
			}
			destroys[j.Owner]++
		}
	}
	want := map[string]int{"TerraformCluster/" + b.name: 1}
	for _, m := range b.machines {
		want["TerraformMachine/"+m] = 1
	}
	if fmt.Sprint(destroys) != fmt.Sprint(want) {
		t.Errorf("destroy Jobs on the target %v, want %v", destroys, want)
	}
	checkSourceEmpty(t, ctx, tgt.c, b.ns)
	t.Logf("source bring-up %v, target up %v (in parallel), move %v, target Ready %v after the move started, change applied at %v, deleted at %v; "+
		"source Jobs %d before the move plus the held apply, target Jobs %v; whole test %v",
		broughtUp.Round(time.Second), targetUp.Round(time.Second), moved.Round(time.Second), converged.Round(time.Second),
		applied.Round(time.Second), time.Since(tMove).Round(time.Second), srcJobs, jobOps(ttl), time.Since(t0).Round(time.Second))
}

// startMoveTarget starts the target environment: a control plane, Cluster
// API, a kubelet and CAPTF's manager (serving its own webhooks), with the
// runner's ClusterRole; everything stops when the test ends. Its pods pull
// from the source's registry.
func startMoveTarget(t *testing.T, ctx context.Context) (*world, error) {
	r := root(t)
	dir := filepath.Join(shared.dir, "move-target")
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		return nil, err
	}
	crds, err := framework.RenderedCRDs(r, filepath.Join(dir, "build"))
	if err != nil {
		return nil, err
	}
	e, err := env.Start(ctx, env.Options{CAPI: true, Kubelet: true, Logger: logger, CRDPaths: []string{crds},
		Dir: filepath.Join(dir, "env"), KeepDir: true})
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the target's manager: %v", err)
		}
		if err := e.Stop(); err != nil {
			t.Errorf("failed to stop the target environment: %v", err)
		}
	})
	if err := framework.RunnerClusterRole(ctx, r, e.Client); err != nil {
		cancel()
		done <- nil
		return nil, err
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme()})
	if err != nil {
		cancel()
		done <- nil
		return nil, err
	}
	go func() { done <- framework.RunManager(mctx, e, managerOptions(shared.images.Runner)) }()
	if err := framework.WaitForWebhooks(ctx, c, 2*time.Minute); err != nil {
		return nil, err
	}
	return &world{t: t, e: e, c: c, images: shared.images, ns: faultNamespace(moveNamespace), identity: "aws-" + faultNamespace(moveNamespace)}, nil
}

// capiModuleVersion is the pinned Cluster API version (from its module
// folder name).
// setTags sets the no-op cluster module's extra_tags variable: an in-place
// change, so an apply.
func setTags(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey, tags string) {
	t.Helper()
	tc := &infrav1.TerraformCluster{}
	if err := c.Get(ctx, key, tc); err != nil {
		t.Fatal(err)
	}
	base := tc.DeepCopy()
	if tc.Spec.Variables == nil {
		tc.Spec.Variables = map[string]apiextensionsv1.JSON{}
	}
	tc.Spec.Variables["extra_tags"] = apiextensionsv1.JSON{Raw: []byte(tags)}
	if err := c.Patch(ctx, tc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// moveHold follows the Job the move must wait for.
type moveHold struct {
	tl    *framework.Timeline
	owner string
	from  int
	job   string
	// heldFor is how long the source was seen paused with the block set
	// and the Job running.
	heldFor time.Duration
}

func newMoveHold(tl *framework.Timeline, owner string, from int) *moveHold {
	return &moveHold{tl: tl, owner: owner, from: from}
}

// waitJob waits for the owner's first Job after from.
func (h *moveHold) waitJob(ctx context.Context, timeout time.Duration) bool {
	_, ok := framework.WaitFor(ctx, timeout, func() (bool, string) {
		for _, j := range h.tl.Jobs()[h.from:] {
			if j.Owner == h.owner {
				h.job = j.Name
				return true, ""
			}
		}
		return false, ""
	})
	return ok
}

// finished reports whether the Job was seen finished.
func (h *moveHold) finished() (bool, time.Time) {
	for _, j := range h.tl.Jobs() {
		if j.Name == h.job {
			return !j.Finished.IsZero(), j.Finished
		}
	}
	return false, time.Time{}
}

// watch follows the move until it returns: the target must hold nothing of
// the cluster until the source's Job finished, and the source is seen
// paused with the block set while the Job runs.
func (h *moveHold) watch(ctx context.Context, src, tgt client.Client, key client.ObjectKey, done <-chan error) error {
	var pausedAt time.Time
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("clusterctl move: %w", err)
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		fin, finAt := h.finished()
		arrived := &infrav1.TerraformCluster{}
		if err := tgt.Get(ctx, key, arrived); err == nil && !fin {
			return fmt.Errorf("TerraformCluster %s reached the target while Job %s still ran on the source", key, h.job)
		} else if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if fin {
			if !pausedAt.IsZero() && h.heldFor == 0 {
				h.heldFor = finAt.Sub(pausedAt)
			}
			continue
		}
		cl := &clusterv1.Cluster{}
		tc := &infrav1.TerraformCluster{}
		if src.Get(ctx, key, cl) != nil || src.Get(ctx, key, tc) != nil {
			continue
		}
		if _, blocked := tc.Annotations[infrav1.BlockMoveAnnotation]; blocked && ptr.Deref(cl.Spec.Paused, false) && pausedAt.IsZero() {
			pausedAt = time.Now()
		}
	}
}

// checkSourceEmpty fails the test for any Terraform* object or CAPTF
// Secret left in ns.
func checkSourceEmpty(t *testing.T, ctx context.Context, c client.Client, ns string) {
	t.Helper()
	var tcs infrav1.TerraformClusterList
	var tms infrav1.TerraformMachineList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&tcs, &tms, &secrets} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range tcs.Items {
		t.Errorf("TerraformCluster %s is left in %s", o.Name, ns)
	}
	for _, o := range tms.Items {
		t.Errorf("TerraformMachine %s is left in %s", o.Name, ns)
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "captf-") || strings.HasPrefix(s.Name, state.SecretName("")) {
			t.Errorf("Secret %s is left in %s", s.Name, ns)
		}
	}
}

// movedReady reports whether the moved cluster is up on the target: every
// TerraformMachine Ready and provisioned with its providerID, every
// Machine with its nodeRef, the TerraformCluster Ready and provisioned with
// its endpoint, the Cluster's control plane initialized, no Job running.
func movedReady(ctx context.Context, b *faultBringUp) (bool, string) {
	c := b.w.c
	if ok, why := b.machinesUp(ctx, func(tm *infrav1.TerraformMachine) bool {
		return provisionedStatus(tm.Status.Initialization) && tm.Spec.ProviderID != "" && tm.Status.ActiveJob == nil
	}); !ok {
		return false, why
	}
	tc := &infrav1.TerraformCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.name}, tc); err != nil {
		return false, err.Error()
	}
	if ok, why := ready(tc); !ok || !provisionedStatus(tc.Status.Initialization) || tc.Spec.ControlPlaneEndpoint.Host == "" || tc.Status.ActiveJob != nil {
		return false, "TerraformCluster: " + why
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.name}, cluster); err != nil {
		return false, err.Error()
	}
	if !conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition) {
		return false, "Cluster API has not marked the control plane initialized"
	}
	return true, ""
}

func provisionedStatus(i *infrav1.Initialization) bool {
	return i != nil && ptr.Deref(i.Provisioned, false)
}

// jobOps counts a timeline's Jobs by owner and operation.
func jobOps(tl *framework.Timeline) map[string]int {
	out := map[string]int{}
	for _, j := range tl.Jobs() {
		out[j.Owner+" "+j.Op]++
	}
	return out
}
