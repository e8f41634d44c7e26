package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func newUnlockCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unlock KIND/NAME",
		Short: "Say who holds a foreign state lock, and how the book lets it be released",
		Long: `For an object whose StateReadable is False/StateLocked (a lock held by
something CAPTF does not recognise: a workstation, another tool), print who
holds it and the stale state lock runbook's steps to release it with the
runtime's own force-unlock once the holder has stopped. Any other lock needs
nothing: CAPTF force-unlocks one left by its own runner pods by itself, and a
live one ends with its Job.

It never edits the Lease: the backend treats a half-edited lock as corrupt.`,
		Example: `  kubectl captf unlock terraformcluster/demo -n team-a`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, k, err := o.oneObject(args)
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
	st := ob.w.GetWorkspaceStatus()
	// The controller classifies the lock every pass (book: Terraform State,
	// Locks): only a holder it does not recognise is StateLocked; it
	// force-unlocks its own runners' stale locks by itself.
	c := meta.FindStatusCondition(st.Conditions, infrav1.StateReadableCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != infrav1.StateLockedReason {
		state := "not reported yet"
		if c != nil {
			state = string(c.Status) + "/" + c.Reason
		}
		fmt.Fprintf(out, "%s in namespace %s has no foreign state lock (StateReadable is %s). Nothing to do: a lock left by one of its own runner pods is force-unlocked by CAPTF with the next Job, and a live one ends with its Job.\n", ob.ref(), ns, state)
		return nil
	}
	suffix := st.StateSecretSuffix
	if suffix == "" {
		return fmt.Errorf("%s in namespace %s reports StateLocked but no status.stateSecretSuffix yet: wait for the next reconcile", ob.ref(), ns)
	}
	leaseName := lockLeaseName(suffix)
	lease, err := k.core.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "The lock Lease %s of %s is gone: the lock is free; StateReadable turns True at the next reconcile.\n", leaseName, ob.ref())
		return nil
	}
	if err != nil {
		return explain(err, "lock Lease "+leaseName+" of "+ob.ref(), ns)
	}
	id := ""
	if lease.Spec.HolderIdentity != nil {
		id = *lease.Spec.HolderIdentity
	}
	if id == "" {
		fmt.Fprintf(out, "The lock Lease %s of %s is not held any more: StateReadable turns True at the next reconcile.\n", leaseName, ob.ref())
		return nil
	}
	fmt.Fprintf(out, "The state of %s is locked by something CAPTF does not recognise:\n", ob.ref())
	fmt.Fprintf(out, "  Lock ID:    %s\n", id)
	var info lockInfo
	if raw := lease.Annotations[lockInfoAnnotation]; raw != "" && json.Unmarshal([]byte(raw), &info) == nil {
		fmt.Fprintf(out, "  Who:        %s\n  Operation:  %s\n  Since:      %s\n", info.Who, info.Operation, info.Created.Format(time.RFC3339))
	}
	fmt.Fprintf(out, "  Condition:  %s\n", oneLine(c.Message))
	fmt.Fprintf(out, `
Make sure whatever holds it has stopped (ask the person, stop the tool). Then,
with the module image's runtime version and access to namespace %[1]s, in an
empty folder:

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

Do not edit or delete the Lease %[4]s by hand: the backend treats a
half-edited lock as corrupt (see the stale state lock runbook).
`, ns, suffix, id, leaseName)
	return nil
}

// lockInfoAnnotation holds the backend's lock info JSON on the lock Lease
// (internal/state.LockInfoAnnotation).
const lockInfoAnnotation = "app.terraform.io/lock-info"

// lockInfo is the part of the backend's lock info unlock prints.
type lockInfo struct {
	Who       string    `json:"Who"`
	Operation string    `json:"Operation"`
	Created   time.Time `json:"Created"`
}

// lockLeaseName is the backend's lock Lease of a state suffix
// (internal/state.LockLeaseName, which the plugin does not link so that it
// starts without controller-runtime; a test keeps them equal).
func lockLeaseName(suffix string) string { return "lock-tfstate-default-" + suffix }
