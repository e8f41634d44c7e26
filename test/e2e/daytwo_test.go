package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestPluginDayTwo runs the plugin's day-2 commands through kubectl's
// plugin discovery as a user bound to a Role of one namespace, each to its
// effect on a real cluster:
//
//   - reconcile: the pass runs and consumes captf.io/reconcile-requested;
//   - drift check: a drift Job runs now (the interval is an hour away) and
//     consumes captf.io/drift-check-requested;
//   - suspend: Paused turns True, and reconcile and drift check refuse;
//     resume: Paused turns False;
//   - status --watch prints a row when Paused changes, and ends when
//     interrupted; -o name, -o jsonpath and -o custom-columns print the
//     object.
//
// And kubectl's conventions, as the admin: kubectl get tc,tm -A (the short
// names) and kubectl get captf (the category) list the cluster.
func TestPluginDayTwo(t *testing.T) {
	t.Parallel()
	const ns, name = "team-daytwo", "daytwo"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	cluster, created := w.clusterObjects(ns, name, func(s *infrav1.TerraformClusterSpec) {
		s.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To[int32](3600)}
	})
	w.create(ctx, cluster, created)
	key := client.ObjectKey{Namespace: ns, Name: name}
	tc := &infrav1.TerraformCluster{}
	get := func() {
		if err := w.c.Get(ctx, key, tc); err != nil {
			t.Fatal(err)
		}
	}
	has := func(k string) bool {
		_, ok := tc.Annotations[k]
		return ok
	}
	settled := func() (bool, string) {
		get()
		ok, why := ready(tc)
		return ok && tc.Status.ActiveJob == nil, why
	}
	w.eventually(ctx, 5*time.Minute, "the first apply", settled)
	const operator = "operator@team-daytwo"
	w.operatorRole(ctx, ns, operator)
	ref := "tc/" + name

	// kubectl's conventions, as the admin.
	for _, args := range [][]string{{"get", "tc,tm", "-A"}, {"get", "captf", "-n", ns}} {
		out, stderr, err := w.kubectl(ctx, "", args...)
		if err != nil || !strings.Contains(out, name) {
			t.Errorf("kubectl %s: %v %s, want the TerraformCluster %s listed", strings.Join(args, " "), err, stderr, name)
		}
	}

	// Outputs through the printers.
	if out := w.mustCaptf(ctx, operator, "status", "-n", ns, "-o", "name"); out != "terraformcluster."+infrav1.GroupVersion.Group+"/"+name+"\n" {
		t.Errorf("status -o name printed %q", out)
	}
	if out := w.mustCaptf(ctx, operator, "status", "-n", ns, "-o", "jsonpath={.items[0].ready}/{.items[0].lastRun.operation}"); out != "True/apply" {
		t.Errorf("status -o jsonpath printed %q", out)
	}
	if out := w.mustCaptf(ctx, operator, "status", "-n", ns, "-o", "custom-columns=NAME:.metadata.name,READY:.ready"); !strings.Contains(out, "\n"+name+"   True\n") {
		t.Errorf("status -o custom-columns printed %q", out)
	}

	// reconcile: a pass runs and consumes the request.
	w.mustCaptf(ctx, operator, "reconcile", ref, "-n", ns)
	w.eventually(ctx, time.Minute, "the reconcile request to be consumed", func() (bool, string) {
		get()
		return !has(infrav1.ReconcileRequestedAnnotation), "annotations " + strings.Join(keysOf(tc.Annotations), ",")
	})

	// drift check: a drift Job now.
	requested := time.Now().Add(-time.Second)
	w.mustCaptf(ctx, operator, "drift", "check", ref, "-n", ns)
	w.eventually(ctx, 5*time.Minute, "the requested drift check to run", func() (bool, string) {
		ok, why := settled()
		last := tc.Status.LastDriftCheck
		if last == nil {
			return false, why + "; no drift check yet"
		}
		return ok && !has(infrav1.DriftCheckRequestedAnnotation) && last.After(requested),
			why + "; lastDriftCheck " + last.UTC().Format(time.RFC3339)
	})
	if j := newestJob(ctx, t, w, ns, infrav1.OperationDrift); j.Name == "" || !jobSucceeded(&j) {
		t.Errorf("the drift Job %q did not succeed", j.Name)
	}

	// status --watch, as the operator: a row when suspend pauses the cluster.
	var watched syncBuffer
	watch := w.kubectlCommand(ctx, operator, "captf", "status", "-n", ns, "--watch")
	watch.Stdout, watch.Stderr = &watched, &watched
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, time.Minute, "status --watch to print its table", func() (bool, string) {
		return strings.HasPrefix(watched.String(), "NAME "), watched.String()
	})

	// suspend: Paused True, and the requests refuse.
	w.mustCaptf(ctx, operator, "suspend", ref, "-n", ns)
	w.eventually(ctx, time.Minute, "Paused to turn True", func() (bool, string) {
		get()
		c := conditionOf(tc, clusterv1.PausedCondition)
		return c.Status == metav1.ConditionTrue, string(c.Status) + "/" + c.Reason
	})
	w.eventually(ctx, time.Minute, "status --watch to print the paused row", func() (bool, string) {
		return strings.Contains(watched.String(), "paused\n"), watched.String()
	})
	if err := watch.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := watch.Wait(); err != nil {
		t.Errorf("status --watch ended with %v when interrupted: %s", err, watched.String())
	}
	for _, args := range [][]string{{"reconcile", ref}, {"drift", "check", ref}} {
		if _, stderr, err := w.captf(ctx, operator, append(args, "-n", ns)...); err == nil || !strings.Contains(stderr, "is paused") {
			t.Errorf("%s of a suspended cluster: %v %q, want a refusal naming the pause", args[0], err, stderr)
		}
	}
	get()
	if has(infrav1.ReconcileRequestedAnnotation) || has(infrav1.DriftCheckRequestedAnnotation) {
		t.Errorf("a refused request wrote its annotation: %v", keysOf(tc.Annotations))
	}

	// resume: Paused False.
	w.mustCaptf(ctx, operator, "resume", ref, "-n", ns)
	w.eventually(ctx, time.Minute, "Paused to turn False", func() (bool, string) {
		get()
		c := conditionOf(tc, clusterv1.PausedCondition)
		return c.Status == metav1.ConditionFalse && !has(clusterv1.PausedAnnotation), string(c.Status) + "/" + c.Reason
	})
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func jobSucceeded(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == "True" {
			return true
		}
	}
	return false
}
