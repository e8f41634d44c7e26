package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Backup is one state backup restore can push back.
type Backup struct {
	Serial  int64     `json:"serial"`
	TakenAt time.Time `json:"takenAt"`
	Bytes   int64     `json:"bytes"`
	// Resources is the managed resource count recorded on the backup's
	// Secret, -1 when it could not be read.
	Resources int `json:"resources"`
}

func newRestoreCommand(o *options) *cobra.Command {
	var serial int64
	cmd := &cobra.Command{
		Use:   "restore KIND/NAME [--serial N]",
		Short: "List an object's state backups, or ask for one to be restored",
		Long: `Without --serial, list the state backups in status.stateBackups, newest
first, with the resource count each recorded (pick the newest whose count
matches what exists). With --serial, write captf.io/restore-state=<serial>:
the controller runs a restore Job (state push of the backup) before any other
operation, and removes the annotation when it succeeds. See the state restore
runbook for what a restore does and does not undo.`,
		Example: `  kubectl captf restore terraformmachine/demo-md-0-x2x9k -n team-a
  kubectl captf restore terraformmachine/demo-md-0-x2x9k -n team-a --serial 7`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, k, err := o.oneObject(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ob, err := k.get(ctx, t)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("serial") {
				return printBackups(o.streams.Out, ob, backupsOf(ctx, k, ob), o.now())
			}
			return requestRestore(ctx, o.streams.Out, k, t, serial)
		},
	}
	cmd.Flags().Int64Var(&serial, "serial", 0, "The serial of the backup to restore (from the list without --serial).")
	return cmd
}

// backupsOf lists status.stateBackups with the resource count each backup
// Secret records; it reads the Secrets' metadata only, never their data,
// and leaves the count unknown without the right to list them.
func backupsOf(ctx context.Context, k *kube, ob object) []Backup {
	st := ob.w.GetWorkspaceStatus()
	counts := map[int64]int{}
	if st.StateSecretSuffix != "" {
		sel := infrav1.StateBackupLabel + "=true," + infrav1.StateBackupSuffixLabel + "=" + st.StateSecretSuffix
		l, err := k.meta.Resource(secretsGVR).Namespace(ob.w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err == nil {
			for _, s := range l.Items {
				a := s.Annotations
				if a[infrav1.StateBackupChunkAnnotation] != "" && a[infrav1.StateBackupChunkAnnotation] != "0" {
					continue
				}
				serial, err1 := strconv.ParseInt(a[infrav1.StateBackupSerialAnnotation], 10, 64)
				n, err2 := strconv.Atoi(a[infrav1.StateBackupResourcesAnnotation])
				if err1 == nil && err2 == nil {
					counts[serial] = n
				}
			}
		}
	}
	out := make([]Backup, 0, len(st.StateBackups))
	for _, b := range st.StateBackups {
		n, ok := counts[b.Serial]
		if !ok {
			n = -1
		}
		out = append(out, Backup{Serial: b.Serial, TakenAt: b.TakenAt.Time, Bytes: b.Bytes, Resources: n})
	}
	return out
}

func printBackups(out io.Writer, ob object, bs []Backup, now time.Time) error {
	st := ob.w.GetWorkspaceStatus()
	if len(bs) == 0 {
		fmt.Fprintf(out, "%s in namespace %s has no state backup: a restore needs one (see the state restore runbook, \"Without a backup\").\n", ob.ref(), ob.w.GetNamespace())
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SERIAL\tTAKEN\tBYTES\tRESOURCES")
	for _, b := range bs {
		n := "?"
		if b.Resources >= 0 {
			n = strconv.Itoa(b.Resources)
		}
		at := b.TakenAt
		fmt.Fprintf(tw, "%d\t%s ago\t%d\t%s\n", b.Serial, age(&at, now), b.Bytes, n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if st.ObservedStateSerial > 0 {
		fmt.Fprintf(out, "Current state serial: %d\n", st.ObservedStateSerial)
	}
	if v, ok := ob.w.GetAnnotations()[infrav1.RestoreStateAnnotation]; ok {
		fmt.Fprintf(out, "Restore requested: %s=%s\n", infrav1.RestoreStateAnnotation, v)
	}
	if c := meta.FindStatusCondition(st.Conditions, infrav1.RestoreJobSucceededCondition); c != nil {
		fmt.Fprintf(out, "Last restore: %s/%s\n", c.Status, c.Reason)
	}
	fmt.Fprintf(out, "Restore one:  kubectl captf restore %s -n %s --serial <serial>\n", ob.ref(), ob.w.GetNamespace())
	return nil
}

// requestRestore writes captf.io/restore-state for a serial listed in
// status.stateBackups.
func requestRestore(ctx context.Context, out io.Writer, k *kube, t target, serial int64) error {
	for attempt := 0; ; attempt++ {
		ob, err := k.get(ctx, t)
		if err != nil {
			return err
		}
		var listed []string
		found := false
		for _, b := range ob.w.GetWorkspaceStatus().StateBackups {
			listed = append(listed, strconv.FormatInt(b.Serial, 10))
			found = found || b.Serial == serial
		}
		if !found {
			have := "none"
			if len(listed) > 0 {
				have = strings.Join(listed, ", ")
			}
			return fmt.Errorf("%s in namespace %s has no state backup with serial %d (backups: %s): list them with kubectl captf restore %s -n %s",
				ob.ref(), ob.w.GetNamespace(), serial, have, ob.ref(), ob.w.GetNamespace())
		}
		v := strconv.FormatInt(serial, 10)
		err = k.patchAnnotation(ctx, ob, infrav1.RestoreStateAnnotation, &v)
		if errors.Is(err, errConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: restore of serial %d requested (%s=%d)\nFollow it:  kubectl captf status %s -n %s\n", ob.ref(), serial, infrav1.RestoreStateAnnotation, serial, ob.ref(), ob.w.GetNamespace())
		return nil
	}
}

func newAbandonCommand(o *options) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "abandon KIND/NAME",
		Short: "Let a deleting object whose state is lost go without a destroy",
		Long: `For a deleting object whose state is lost (StateReadable False/StateLost) and
that has no backup worth restoring: writes captf.io/abandon-infrastructure
with the object's UID, the confirmation the controller requires, and CAPTF
removes its finalizer without a destroy. The infrastructure keeps running,
untracked: remove it by hand. Restore a backup instead when there is one
(kubectl captf restore KIND/NAME); the destroy then follows.

It asks you to type the object's name, unless --yes is given.`,
		Example: `  kubectl captf abandon terraformmachine/demo-md-0-x2x9k -n team-a`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, k, err := o.oneObject(args)
			if err != nil {
				return err
			}
			return abandon(cmd.Context(), o.streams.In, o.streams.Out, k, t, yes)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "Do not ask to type the object's name.")
	return cmd
}

// abandonable says why an object may not be abandoned, "" when it may
// (book: Stuck destroy runbook; the annotation's definition).
func abandonable(ob object) string {
	w := ob.w
	if w.GetDeletionTimestamp() == nil {
		return "it is not being deleted: abandon only lets a deleting object go; delete it first, or leave it"
	}
	c := meta.FindStatusCondition(w.GetWorkspaceStatus().Conditions, infrav1.StateReadableCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != infrav1.StateLostReason {
		state := "not reported"
		if c != nil {
			state = string(c.Status) + "/" + c.Reason
		}
		return "its state is not lost (StateReadable is " + state + "): its destroy can run; see the stuck destroy runbook"
	}
	return ""
}

// confirmed reads one line and reports whether it is the object's name;
// no input at all is no confirmation.
func confirmed(in io.Reader, name string) (bool, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return strings.TrimSpace(line) == name, nil
}

func abandon(ctx context.Context, in io.Reader, out io.Writer, k *kube, t target, yes bool) error {
	ob, err := k.get(ctx, t)
	if err != nil {
		return err
	}
	if why := abandonable(ob); why != "" {
		return fmt.Errorf("%s in namespace %s cannot be abandoned: %s", ob.ref(), ob.w.GetNamespace(), why)
	}
	uid := string(ob.w.GetUID())
	if ob.w.GetAnnotations()[infrav1.AbandonInfrastructureAnnotation] == uid {
		fmt.Fprintf(out, "%s is already abandoned; CAPTF removes its finalizer at its next reconcile\n", ob.ref())
		return nil
	}
	if !yes {
		fmt.Fprintf(out, "%s in namespace %s is being deleted and its state is lost.\n", ob.ref(), ob.w.GetNamespace())
		if n := len(ob.w.GetWorkspaceStatus().StateBackups); n > 0 {
			fmt.Fprintf(out, "It has %d state backup(s): restoring one lets the destroy run (kubectl captf restore %s -n %s).\n", n, ob.ref(), ob.w.GetNamespace())
		}
		fmt.Fprintf(out, "Abandoning removes its finalizer without a destroy: its infrastructure keeps running, untracked.\n")
		fmt.Fprintf(out, "Type the object's name (%s) to abandon it: ", ob.w.GetName())
		if ok, err := confirmed(in, ob.w.GetName()); !ok {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s was not abandoned: the name typed does not match (rerun with --yes to skip the question)", ob.ref())
		}
	}
	err = k.patchAnnotation(ctx, ob, infrav1.AbandonInfrastructureAnnotation, &uid)
	if err != nil {
		if errors.Is(err, errConflict) {
			return fmt.Errorf("%s changed while you confirmed: %w", ob.ref(), err)
		}
		return err
	}
	fmt.Fprintf(out, "%s abandoned (%s=%s): CAPTF removes its finalizer without a destroy\n", ob.ref(), infrav1.AbandonInfrastructureAnnotation, uid)
	return nil
}
