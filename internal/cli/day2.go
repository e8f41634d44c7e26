package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

// pausedAnnotation is Cluster API's clusterv1.PausedAnnotation, spelled
// here so the plugin does not load Cluster API's packages to start (a test
// keeps them equal).
const pausedAnnotation = "cluster.x-k8s.io/paused"

// managedByAnnotation is Cluster API's clusterv1.ManagedByAnnotation: an
// object that carries it is externally managed, and CAPTF writes nothing
// to it.
const managedByAnnotation = "cluster.x-k8s.io/managed-by"

// clustersGVR is Cluster API's Cluster, read to tell whether it is paused.
var clustersGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}

// day2 is what one of reconcile, drift check, suspend and resume does to
// an object it read: refuse (an error naming why), or write one
// annotation (value nil removes it) and say what follows.
type day2 func(ctx context.Context, k *kube, ob object, now time.Time) (key string, value *string, said string, err error)

// day2Command builds a command that runs act on its one KIND/NAME.
func day2Command(o *options, cmd *cobra.Command, act day2) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, k, err := o.oneObject(args)
		if err != nil {
			return err
		}
		return runDay2(cmd.Context(), o.streams.Out, k, t, o.now(), act)
	}
	return cmd
}

func runDay2(ctx context.Context, out io.Writer, k *kube, t target, now time.Time, act day2) error {
	ob, err := k.get(ctx, t)
	if err != nil {
		return err
	}
	key, value, said, err := act(ctx, k, ob, now)
	if err != nil {
		return err
	}
	if key != "" {
		if err := k.patchAnnotation(ctx, ob, key, value); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(out, said)
	return err
}

func newReconcileCommand(o *options) *cobra.Command {
	return day2Command(o, &cobra.Command{
		Use:   "reconcile KIND/NAME",
		Short: "Ask for a reconcile pass now instead of at the next requeue",
		Long: `Write captf.io/reconcile-requested (the current time) on the object: the
write wakes its controller, which runs a pass now and removes the
annotation with that pass's status patch.

Refused on an object that is paused (a pass would start nothing: resume it
first) or being deleted (its deletion runs by itself).`,
		Example: `  kubectl captf reconcile terraformcluster/demo -n team-a
  kubectl captf reconcile tm/demo-md-0-x2v7k -n team-a`,
	}, reconcileRequest)
}

func reconcileRequest(_ context.Context, _ *kube, ob object, now time.Time) (string, *string, string, error) {
	if err := refuseDeletingOrPaused(ob, "a reconcile pass"); err != nil {
		return "", nil, "", err
	}
	v := now.UTC().Format(time.RFC3339)
	return infrav1.ReconcileRequestedAnnotation, &v,
		fmt.Sprintf("Asked for a reconcile pass of %s in namespace %s (%s=%s); the annotation goes when the pass has run.",
			ob.ref(), ob.w.GetNamespace(), infrav1.ReconcileRequestedAnnotation, v), nil
}

func newDriftCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "Drift checks",
	}
	cmd.AddCommand(day2Command(o, &cobra.Command{
		Use:   "check KIND/NAME",
		Short: "Ask for a drift check now instead of at the next interval",
		Long: `Write captf.io/drift-check-requested (the current time) on the object: its
next pass starts a drift Job, which removes the annotation. A Job already
running goes first: the check starts once it has finished (a drift check
that finishes after the request answers it). The check runs under the
object's usual rules (its backoff after a failed check, the leases).

Refused where no drift check can run: before the object is provisioned,
while it is paused or being deleted, and when its drift checks are off
(spec.drift.intervalSeconds: 0 on a TerraformCluster or TerraformMachine,
or a TerraformMachine inheriting 0 from its cluster's spec.defaults.drift).`,
		Example: `  kubectl captf drift check terraformcluster/demo -n team-a`,
	}, func(ctx context.Context, k *kube, ob object, now time.Time) (string, *string, string, error) {
		return driftRequest(ctx, k, ob, now, Settings{DriftDefault: decide.DefaultDriftInterval})
	}))
	return cmd
}

func driftRequest(ctx context.Context, k *kube, ob object, now time.Time, s Settings) (string, *string, string, error) {
	if err := refuseDeletingOrPaused(ob, "a drift check"); err != nil {
		return "", nil, "", err
	}
	st := ob.w.GetWorkspaceStatus()
	if st.Initialization == nil || !ptr.Deref(st.Initialization.Provisioned, false) {
		return "", nil, "", fmt.Errorf("refused: %s in namespace %s is not provisioned yet: a drift check compares the infrastructure with the state of a provisioning apply, and its first check follows that apply by itself", ob.ref(), ob.w.GetNamespace())
	}
	owner, err := ownerCluster(ctx, k, ob)
	if err != nil {
		return "", nil, "", err
	}
	if iv := effectiveDrift(ob, owner, s); !iv.Enabled {
		where := "spec.drift.intervalSeconds"
		if iv.Source == decide.SourceClusterDefaults {
			where = "its TerraformCluster's spec.defaults.drift.intervalSeconds"
		}
		return "", nil, "", fmt.Errorf("refused: drift checks are off for %s in namespace %s (%s is 0): a disabled drift check never runs, on request neither; set an interval to check it", ob.ref(), ob.w.GetNamespace(), where)
	}
	v := now.UTC().Format(time.RFC3339)
	said := fmt.Sprintf("Asked for a drift check of %s in namespace %s (%s=%s); the annotation goes when the drift Job starts.",
		ob.ref(), ob.w.GetNamespace(), infrav1.DriftCheckRequestedAnnotation, v)
	if a := st.ActiveJob; a != nil {
		said += fmt.Sprintf(" Job %s (%s) runs now: the check starts after it.", a.Name, a.Operation)
	}
	return infrav1.DriftCheckRequestedAnnotation, &v, said, nil
}

// ownerCluster is the TerraformCluster of a machine's or pool's Cluster,
// for the drift defaults it gives; nil for a TerraformCluster, or when
// there is none.
func ownerCluster(ctx context.Context, k *kube, ob object) (*infrav1.TerraformCluster, error) {
	name := clusterName(ob.w)
	if !ob.w.Capabilities().ClusterMember || name == "" {
		return nil, nil
	}
	tcs, err := k.list(ctx, kinds[0], ob.w.GetNamespace(), clusterNameLabel+"="+name)
	if err != nil {
		return nil, err
	}
	for _, tc := range tcs {
		if c, ok := tc.w.(*infrav1.TerraformCluster); ok {
			return c, nil
		}
	}
	return nil, nil
}

// refuseDeletingOrPaused refuses what on a deleting or paused object, and
// on one another controller manages (no pass acts on it, so the request
// would never be answered).
func refuseDeletingOrPaused(ob object, what string) error {
	ref, ns := ob.ref(), ob.w.GetNamespace()
	if by, ok := ob.w.GetAnnotations()[managedByAnnotation]; ok {
		return fmt.Errorf("refused: %s in namespace %s is externally managed (%s=%s): CAPTF runs no pass and no Job for it, so %s would never happen", ref, ns, managedByAnnotation, by, what)
	}
	if ob.w.GetDeletionTimestamp() != nil {
		return fmt.Errorf("refused: %s in namespace %s is being deleted: its deletion runs by itself, and %s would change nothing of it", ref, ns, what)
	}
	if why := pausedBy(ob); why != "" {
		return fmt.Errorf("refused: %s in namespace %s is paused (%s): a paused object starts no Job, so %s would do nothing; resume it first", ref, ns, why, what)
	}
	return nil
}

// pausedBy says why an object is paused ("" when it is not): its own
// annotation, or (Paused True without it) its Cluster.
func pausedBy(ob object) string {
	if _, ok := ob.w.GetAnnotations()[pausedAnnotation]; ok {
		return "its " + pausedAnnotation + " annotation; kubectl captf resume " + ob.ref() + " removes it"
	}
	if c := meta.FindStatusCondition(ob.w.GetWorkspaceStatus().Conditions, infrav1.PausedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return "its Cluster " + dash(clusterName(ob.w)) + " has spec.paused: true"
	}
	return ""
}

func newSuspendCommand(o *options) *cobra.Command {
	return day2Command(o, &cobra.Command{
		Use:   "suspend KIND/NAME",
		Short: "Pause an object with Cluster API's paused annotation",
		Long: `Set cluster.x-k8s.io/paused on the object. A paused object starts no new Job
(no apply, drift check, refresh or destroy); a Job already running
finishes and is bookkept, a Job that can never start is deleted, and the
clusterctl move block still clears. Paused turns True at its next pass.
kubectl captf resume undoes it.`,
		Example: `  kubectl captf suspend terraformcluster/demo -n team-a`,
	}, suspend)
}

func suspend(_ context.Context, _ *kube, ob object, _ time.Time) (string, *string, string, error) {
	ref, ns := ob.ref(), ob.w.GetNamespace()
	if _, ok := ob.w.GetAnnotations()[pausedAnnotation]; ok {
		return "", nil, fmt.Sprintf("%s in namespace %s is suspended already (%s).", ref, ns, pausedAnnotation), nil
	}
	said := fmt.Sprintf("Suspended %s in namespace %s (%s): it starts no new Job; a running Job finishes and is bookkept. Paused turns True at its next pass.", ref, ns, pausedAnnotation)
	if a := ob.w.GetWorkspaceStatus().ActiveJob; a != nil {
		said += fmt.Sprintf(" Job %s (%s) runs on to its end.", a.Name, a.Operation)
	}
	return pausedAnnotation, ptr.To("true"), said, nil
}

func newResumeCommand(o *options) *cobra.Command {
	return day2Command(o, &cobra.Command{
		Use:   "resume KIND/NAME",
		Short: "Remove Cluster API's paused annotation from an object",
		Long: `Remove cluster.x-k8s.io/paused from the object: Paused turns False at its
next pass, and what waited starts.

Refused when the object would stay paused because its Cluster has
spec.paused: true (clusterctl move pauses it while it moves): resume the
Cluster first.`,
		Example: `  kubectl captf resume terraformcluster/demo -n team-a`,
	}, resume)
}

func resume(ctx context.Context, k *kube, ob object, _ time.Time) (string, *string, string, error) {
	ref, ns := ob.ref(), ob.w.GetNamespace()
	_, annotated := ob.w.GetAnnotations()[pausedAnnotation]
	cluster := clusterName(ob.w)
	paused, known, err := clusterPaused(ctx, k, ns, cluster)
	if err != nil {
		return "", nil, "", err
	}
	if !known {
		// Without the right to read the Cluster, Paused True on an object
		// without the annotation tells the same.
		c := meta.FindStatusCondition(ob.w.GetWorkspaceStatus().Conditions, infrav1.PausedCondition)
		paused = !annotated && c != nil && c.Status == metav1.ConditionTrue
	}
	if paused {
		return "", nil, "", fmt.Errorf("refused: %s in namespace %s stays paused because its Cluster %s has spec.paused: true; resume the Cluster first (kubectl patch cluster %s -n %s --type merge -p '{\"spec\":{\"paused\":false}}', once whatever paused it, such as clusterctl move, is done)", ref, ns, dash(cluster), dash(cluster), ns)
	}
	if !annotated {
		return "", nil, fmt.Sprintf("%s in namespace %s is not suspended (no %s): nothing to do.", ref, ns, pausedAnnotation), nil
	}
	return pausedAnnotation, nil, fmt.Sprintf("Resumed %s in namespace %s: Paused turns False at its next pass.", ref, ns), nil
}

// clusterPaused reads the Cluster's spec.paused; known is false when the
// Cluster cannot be read (no right to, or none).
func clusterPaused(ctx context.Context, k *kube, ns, name string) (paused, known bool, err error) {
	if name == "" {
		return false, false, nil
	}
	u, err := k.dyn.Resource(clustersGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
		return false, false, nil
	case err != nil:
		return false, false, explain(err, "Cluster "+name, ns)
	}
	return clusterSpecPaused(u), true, nil
}

func clusterSpecPaused(u *unstructured.Unstructured) bool {
	p, _, _ := unstructured.NestedBool(u.Object, "spec", "paused")
	return p
}
