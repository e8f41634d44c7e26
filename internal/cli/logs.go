package cli

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

const (
	// jobNameLabel is the label Kubernetes puts on a Job's pods.
	jobNameLabel = "batch.kubernetes.io/job-name"
	// sourceContainer is the runner pod's container that runs the module
	// (internal/jobs.SourceContainer; a test keeps them equal).
	sourceContainer = "source"
)

func newLogsCommand(o *options) *cobra.Command {
	var (
		op, job, container string
		follow             bool
	)
	cmd := &cobra.Command{
		Use:   "logs KIND/NAME [--op apply|destroy|drift|refresh|restore|plan] [--job NAME]",
		Short: "Print the log of an object's latest (or chosen) Job",
		Long: `Print the log of the runner pod of an object's newest Job, of the newest Job
of one operation with --op, or of the Job named with --job. The log is the
runner's: each step (init, plan, apply...) as it starts and ends, the
runtime's own output, and the step a failed run stopped at.`,
		Example: `  kubectl captf logs terraformcluster/demo -n team-a
  kubectl captf logs terraformcluster/demo -n team-a --op apply`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			switch infrav1.Operation(op) {
			case "", infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationDrift, infrav1.OperationRefresh, infrav1.OperationRestore, infrav1.OperationPlan:
			default:
				return fmt.Errorf("unknown operation %q: use apply, destroy, drift, refresh, restore or plan", op)
			}
			k, err := o.kube()
			if err != nil {
				return err
			}
			return logs(cmd.Context(), o.streams.Out, o.streams.ErrOut, k, t, op, job, container, follow)
		},
	}
	cmd.Flags().StringVar(&op, "op", "", "The operation whose newest Job to read.")
	cmd.Flags().StringVar(&job, "job", "", "The Job to read (one of the object's).")
	cmd.Flags().StringVarP(&container, "container", "c", sourceContainer, "The pod's container.")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "Stream the log while the Job runs.")
	return cmd
}

func logs(ctx context.Context, out, errOut io.Writer, k *kube, t target, op, jobName, container string, follow bool) error {
	ob, err := k.get(ctx, t)
	if err != nil {
		return err
	}
	ns := ob.w.GetNamespace()
	js, err := k.core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: infrav1.ManagedLabel + "=true"})
	if err != nil {
		return explain(err, "the Jobs of "+ob.ref(), ns)
	}
	rows := jobRows(ob, js.Items)
	var pick *JobRow
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		if (jobName == "" || r.Name == jobName) && (op == "" || r.Operation == op) {
			pick = &rows[i]
			break
		}
	}
	if pick == nil {
		what := "no Job"
		switch {
		case jobName != "":
			what = "no Job named " + jobName
		case op != "":
			what = "no " + op + " Job"
		}
		return fmt.Errorf("%s of %s remains in namespace %s: finished Jobs are pruned to the history limits (spec.jobs.successfulJobsHistoryLimit, failedJobsHistoryLimit); kubectl captf status %s -n %s shows the last run", what, ob.ref(), ns, ob.ref(), ns)
	}
	pods, err := k.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobNameLabel + "=" + pick.Name})
	if err != nil {
		return explain(err, "the pods of Job "+pick.Name, ns)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no pod of Job %s of %s (%s, %s) is left in namespace %s to read a log from", pick.Name, ob.ref(), pick.Operation, pick.State, ns)
	}
	sort.SliceStable(pods.Items, func(a, b int) bool {
		return pods.Items[a].CreationTimestamp.Before(&pods.Items[b].CreationTimestamp)
	})
	pod := pods.Items[len(pods.Items)-1]
	header := fmt.Sprintf("# Job %s (%s, %s), pod %s, container %s", pick.Name, pick.Operation, pick.State, pod.Name, container)
	if lr := ob.w.GetWorkspaceStatus().LastRun; lr != nil && lr.Job == pick.Name && lr.Error != nil {
		header += fmt.Sprintf("; the run stopped: %s", outcome(lr.Error))
		if lr.Error.Summary != "" {
			header += ": " + oneLine(lr.Error.Summary)
		}
	}
	fmt.Fprintln(errOut, header)
	rc, err := k.core.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, Follow: follow}).Stream(ctx)
	if err != nil {
		return explain(err, "the log of pod "+pod.Name, ns)
	}
	defer func() { _ = rc.Close() }()
	_, err = io.Copy(out, rc)
	return err
}
