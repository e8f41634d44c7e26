package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

func newUnlockCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unlock KIND/NAME",
		Short: "Say who holds an object's state lock, and how the book lets it be released",
		Long: `Read the backend's lock Lease of an object's state and say who holds it:

  - nobody: nothing to do;
  - one of the object's own runner pods that is gone: CAPTF force-unlocks it
    itself with the next Job; nothing to do;
  - one of its runner pods still running: the lock is live; wait for it;
  - anything else (a workstation, another tool): print the stale state lock
    runbook's steps to release it with the runtime's own force-unlock, once
    whatever holds it has stopped.

It never edits the Lease: the backend treats a half-edited lock as corrupt.`,
		Example: `  kubectl captf unlock terraformcluster/demo -n team-a`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			k, err := o.kube()
			if err != nil {
				return err
			}
			return unlock(cmd.Context(), o.streams.Out, k, t)
		},
	}
	return cmd
}

func unlock(ctx context.Context, out io.Writer, k *kube, t target) error {
	ob, err := k.get(ctx, t)
	if err != nil {
		return err
	}
	ns := ob.w.GetNamespace()
	suffix := ob.w.GetWorkspaceStatus().StateSecretSuffix
	if suffix == "" {
		if suffix, err = state.Suffix(ns, ob.kind.Kind, ob.w.GetName()); err != nil {
			return fmt.Errorf("%s: %w", ob.ref(), err)
		}
	}
	leaseName := state.LockLeaseName(suffix)
	lease, err := k.core.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return explain(err, "lock Lease "+leaseName+" of "+ob.ref(), ns)
	}
	lock := state.Lock{}
	if err == nil {
		lock = state.LockFromLease(lease)
	}
	owners := state.LockOwners{}
	if lock.Held() {
		js, err := k.jobs(ctx, ns)
		if err != nil {
			return err
		}
		for _, j := range jobRows(ob, js) {
			owners.Jobs = append(owners.Jobs, j.Name)
		}
		pods, err := k.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobNameLabel})
		if err == nil {
			for i := range pods.Items {
				if _, mine := indexOf(owners.Jobs, pods.Items[i].Labels[jobNameLabel]); mine {
					owners.Pods = append(owners.Pods, state.RunnerPodOf(&pods.Items[i]))
				}
			}
		}
	}
	v := state.ClassifyLock(lock, owners)
	switch v.Holder {
	case state.LockFree:
		fmt.Fprintf(out, "The state of %s is not locked (Lease %s). Nothing to do.\n", ob.ref(), leaseName)
		return nil
	case state.LockStale:
		fmt.Fprintf(out, "The state of %s is locked by its runner pod %s, which is gone or has exited.\nCAPTF force-unlocks it by itself with the next Job. Nothing to do.\n", ob.ref(), v.Pod)
		return nil
	case state.LockOwnRunner:
		fmt.Fprintf(out, "The state of %s is locked by its runner pod %s, which still runs (%s since %s): the lock is live; wait for the Job.\n", ob.ref(), v.Pod, v.Operation, v.Created.Format("2006-01-02T15:04:05Z07:00"))
		return nil
	}
	fmt.Fprintf(out, "The state of %s is locked by something CAPTF does not recognise:\n", ob.ref())
	fmt.Fprintf(out, "  Lock ID:    %s\n", v.ID)
	if v.Who != "" {
		fmt.Fprintf(out, "  Who:        %s\n  Operation:  %s\n  Since:      %s\n", v.Who, v.Operation, v.Created.Format("2006-01-02T15:04:05Z07:00"))
	}
	if v.Problem != "" {
		fmt.Fprintf(out, "  Note:       %s\n", v.Problem)
	}
	fmt.Fprintf(out, `
Make sure whatever holds it has stopped. Then, with the module image's runtime
version and access to namespace %[1]s, in an empty folder:

cat > backend.tf <<'HCL'
terraform {
  backend "kubernetes" {
    secret_suffix = "%[2]s"
    namespace     = "%[1]s"
  }
}
HCL
tofu init            # or terraform init
tofu force-unlock -force %[3]s

Do not edit or delete the Lease %[4]s by hand (see the stale state lock runbook).
`, ns, suffix, v.ID, leaseName)
	return nil
}

func indexOf(xs []string, x string) (int, bool) {
	for i, s := range xs {
		if s == x {
			return i, true
		}
	}
	return -1, false
}
