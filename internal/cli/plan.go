package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Approval is what an object waits for an approval of (book: Plan
// Approval): a plan under applyPolicy Manual, approved by its plan hash,
// or a blocked destructive plan, approved by its inputs hash.
type Approval struct {
	// Guard is "plan" (applyPolicy Manual) or "destructive-plan".
	Guard string `json:"guard"`
	// Annotation is the key the approval is written to, Hash the value the
	// controller published.
	Annotation string `json:"annotation"`
	Hash       string `json:"hash"`
	// Job is the plan Job, or the blocked apply Job, whose log has the
	// human-readable plan.
	Job       string   `json:"job,omitempty"`
	Add       *int32   `json:"add,omitempty"`
	Change    *int32   `json:"change,omitempty"`
	Destroy   *int32   `json:"destroy,omitempty"`
	Resources []string `json:"resources,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	// Message is ApplyJobSucceeded's message.
	Message string `json:"message,omitempty"`
	// Approved is the value already on the annotation, if any.
	Approved string `json:"approved,omitempty"`
	// CreatedAt is when the plan was read back (Manual plans).
	CreatedAt *time.Time `json:"createdAt,omitempty"`
}

// blockedHash finds the inputs hash a blocked destructive plan's condition
// message names ("... approve inputs hash <h> to apply: ...").
var blockedHash = regexp.MustCompile(`approve inputs hash (\S+) to apply`)

// pendingApproval is what o waits for an approval of, if anything; js are
// the namespace's Jobs (the blocked Job carries the inputs hash). Pure.
func pendingApproval(o object, js []batchv1.Job) *Approval {
	st := o.w.GetWorkspaceStatus()
	c := meta.FindStatusCondition(st.Conditions, infrav1.ApplyJobSucceededCondition)
	if c == nil {
		return nil
	}
	ann := o.w.GetAnnotations()
	if tc, ok := o.w.(*infrav1.TerraformCluster); ok && tc.Status.Plan != nil && c.Status == metav1.ConditionUnknown &&
		(c.Reason == infrav1.PlanAwaitingApprovalReason || c.Reason == infrav1.PlanChangedReason) {
		p := tc.Status.Plan
		a := &Approval{
			Guard: "plan", Annotation: infrav1.ApprovePlanAnnotation, Hash: p.PlanHash, Job: p.Job,
			Add: &p.Add, Change: &p.Change, Destroy: &p.Destroy, Resources: p.Resources, Truncated: p.Truncated,
			Message: c.Message, Approved: ann[infrav1.ApprovePlanAnnotation],
		}
		if p.CreatedAt != nil {
			t := p.CreatedAt.Time
			a.CreatedAt = &t
		}
		return a
	}
	if c.Status != metav1.ConditionFalse || c.Reason != infrav1.DestructivePlanBlockedReason {
		return nil
	}
	a := &Approval{Guard: "destructive-plan", Annotation: infrav1.ApproveDestructivePlanAnnotation, Message: c.Message, Approved: ann[infrav1.ApproveDestructivePlanAnnotation]}
	// The blocked Job: the last run when it is the blocked apply, else the
	// object's newest apply Job marked blocked.
	var blocked *batchv1.Job
	if lr := st.LastRun; lr != nil && lr.Error != nil && lr.Error.Kind == infrav1.RunErrorBlocked {
		for i := range js {
			if js[i].Name == lr.Job && js[i].Namespace == o.w.GetNamespace() {
				blocked = &js[i]
			}
		}
		a.Job = lr.Job
	}
	if blocked == nil {
		mine := jobRows(o, js)
		for i := len(mine) - 1; i >= 0; i-- {
			if mine[i].Operation == string(infrav1.OperationApply) && mine[i].State == "Blocked" {
				for k := range js {
					if js[k].Name == mine[i].Name && js[k].Namespace == o.w.GetNamespace() {
						blocked = &js[k]
					}
				}
				a.Job = mine[i].Name
				break
			}
		}
	}
	if blocked != nil {
		a.Hash = blocked.Annotations[infrav1.InputsHashAnnotation]
	}
	if m := blockedHash.FindStringSubmatch(c.Message); m != nil {
		if a.Hash == "" {
			a.Hash = m[1]
		}
		if _, list, ok := strings.Cut(c.Message, " to apply: "); ok {
			for _, r := range strings.Split(list, ", ") {
				if r = strings.TrimSpace(r); r != "" {
					a.Resources = append(a.Resources, r)
				}
			}
		}
	}
	if a.Hash == "" {
		return nil
	}
	return a
}

func newPlanCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show or approve the plan an object waits on",
	}
	cmd.AddCommand(newPlanShowCommand(o), newPlanApproveCommand(o))
	return cmd
}

func newPlanShowCommand(o *options) *cobra.Command {
	var output, color string
	cmd := &cobra.Command{
		Use:   "show KIND/NAME | tfplan/NAME",
		Short: "Show the plan awaiting approval, or the blocked destructive plan, as a diff",
		Long: `Show what an object waits for an approval of: under applyPolicy Manual, the
plan in status.plan (its hash, counts and changed resources); otherwise a
destructive plan the guard blocked (the inputs hash, and what it deletes or
replaces). When the manager recorded the plan in a TerraformPlan, its diff
follows: per resource the action, and each changed attribute with its value
before and after, sensitive values masked as the runtime masks them.

tfplan/NAME shows one TerraformPlan, whatever its phase (kubectl get tfplan
lists them). --color colours the diff: auto (on a terminal), always or never.`,
		Example: `  kubectl captf plan show terraformcluster/demo -n team-a
  kubectl captf plan show tfplan/captf-c-demo-plan-a1-0b4c1d -n team-a --color=never`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("plan show takes one KIND/NAME or tfplan/NAME, got %d arguments", len(args))
			}
			painted, err := colorOn(color, o.streams.Out)
			if err != nil {
				return err
			}
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("unknown output format %q: use json or yaml", output)
			}
			if name, ok := planTarget(args[0]); ok {
				k, err := o.kube()
				if err != nil {
					return err
				}
				rec, err := k.getPlan(cmd.Context(), k.namespace, name)
				if err != nil {
					return err
				}
				if output != "" {
					return printStructured(o.streams.Out, rec, output)
				}
				return printPlan(o.streams.Out, rec, painted, o.now())
			}
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			k, err := o.kube()
			if err != nil {
				return err
			}
			ob, a, err := loadApproval(cmd.Context(), k, t)
			if err != nil {
				return err
			}
			if a == nil {
				return nothingToApprove(ob)
			}
			if output != "" {
				return printStructured(o.streams.Out, a, output)
			}
			if err := printApproval(o.streams.Out, ob, a, o.now()); err != nil {
				return err
			}
			if rec := k.planOf(cmd.Context(), ob, a); rec != nil {
				fmt.Fprintln(o.streams.Out)
				return printPlan(o.streams.Out, rec, painted, o.now())
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml.")
	cmd.Flags().StringVar(&color, "color", "auto", "Colour the diff: auto (only on a terminal), always or never.")
	return cmd
}

// loadApproval reads the object and what it waits for an approval of.
func loadApproval(ctx context.Context, k *kube, t target) (object, *Approval, error) {
	ob, err := k.get(ctx, t)
	if err != nil {
		return object{}, nil, err
	}
	var js []batchv1.Job
	if lr := ob.w.GetWorkspaceStatus().LastRun; lr != nil {
		// The blocked Job carries the inputs hash; listing the
		// namespace's Jobs also finds an older blocked one.
		if js, err = k.jobs(ctx, ob.w.GetNamespace()); err != nil {
			return object{}, nil, err
		}
	}
	return ob, pendingApproval(ob, js), nil
}

func nothingToApprove(ob object) error {
	c := meta.FindStatusCondition(ob.w.GetWorkspaceStatus().Conditions, infrav1.ApplyJobSucceededCondition)
	state := "not reported yet"
	if c != nil {
		state = string(c.Status) + "/" + c.Reason
	}
	return fmt.Errorf("%s in namespace %s waits for no approval (ApplyJobSucceeded is %s): only a TerraformCluster's plan under applyPolicy Manual or a blocked destructive plan is approved", ob.ref(), ob.w.GetNamespace(), state)
}

func printApproval(out io.Writer, ob object, a *Approval, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	guard := "Plan awaiting approval (applyPolicy Manual)"
	hashName := "Plan hash"
	if a.Guard == "destructive-plan" {
		guard = "Destructive plan blocked"
		hashName = "Inputs hash"
	}
	fmt.Fprintf(tw, "Object:\t%s (namespace %s)\n", ob.ref(), ob.w.GetNamespace())
	fmt.Fprintf(tw, "Waiting:\t%s\n", guard)
	fmt.Fprintf(tw, "%s:\t%s\n", hashName, a.Hash)
	if a.Job != "" {
		fmt.Fprintf(tw, "Job:\t%s\n", a.Job)
	}
	if a.CreatedAt != nil {
		fmt.Fprintf(tw, "Planned:\t%s ago\n", age(a.CreatedAt, now))
	}
	if a.Add != nil {
		fmt.Fprintf(tw, "Changes:\t%d to add, %d to change, %d to destroy\n", *a.Add, *a.Change, *a.Destroy)
	}
	if a.Approved != "" {
		state := "a different hash: it does not approve this plan"
		if a.Approved == a.Hash {
			state = "this hash: the apply runs once the controller sees it"
		}
		fmt.Fprintf(tw, "Approved:\t%s=%s (%s)\n", a.Annotation, a.Approved, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Resources) > 0 {
		fmt.Fprintln(out, "Resources:")
		rs := append([]string(nil), a.Resources...)
		sort.Strings(rs)
		for _, r := range rs {
			fmt.Fprintf(out, "  %s\n", r)
		}
		if a.Truncated {
			fmt.Fprintln(out, "  ... (truncated: the Job's log lists every change)")
		}
	}
	fmt.Fprintln(out)
	if a.Job != "" {
		fmt.Fprintf(out, "Read the plan:  kubectl captf logs %s -n %s --job %s\n", ob.ref(), ob.w.GetNamespace(), a.Job)
	}
	fmt.Fprintf(out, "Approve it:     kubectl captf plan approve %s -n %s --hash %s\n", ob.ref(), ob.w.GetNamespace(), a.Hash)
	return nil
}

func newPlanApproveCommand(o *options) *cobra.Command {
	var hash string
	cmd := &cobra.Command{
		Use:   "approve KIND/NAME --hash HASH",
		Short: "Approve the plan shown by plan show, by the hash it showed",
		Long: `Approve what plan show showed: writes captf.io/approve-plan=<plan hash> for
a plan under applyPolicy Manual, or captf.io/approve-destructive-plan=<inputs
hash> for a blocked destructive plan. The hash given must be the one the
controller publishes now: if the plan changed since it was shown, nothing is
written and plan show has to be read again.`,
		Example: `  kubectl captf plan approve terraformcluster/demo -n team-a --hash h1:...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			if hash == "" {
				return fmt.Errorf("--hash is required: copy it from kubectl captf plan show %s", t)
			}
			k, err := o.kube()
			if err != nil {
				return err
			}
			return approve(cmd.Context(), o.streams.Out, k, t, hash)
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", "The hash plan show printed (plan hash, or the blocked plan's inputs hash).")
	return cmd
}

// errStaleHash is returned when the hash given is not the one published.
var errStaleHash = errors.New("the plan changed since it was shown")

// approve writes the approval annotation, only if the hash the controller
// publishes is still hash; the write carries the resourceVersion it
// checked, so a status change in between is caught too (and checked again).
func approve(ctx context.Context, out io.Writer, k *kube, t target, hash string) error {
	for attempt := 0; ; attempt++ {
		ob, a, err := loadApproval(ctx, k, t)
		if err != nil {
			return err
		}
		if a == nil {
			return nothingToApprove(ob)
		}
		if a.Hash != hash {
			return fmt.Errorf("%s in namespace %s: %w: the controller publishes a different %s hash than %s, so nothing was approved; read it again with kubectl captf plan show %s -n %s",
				ob.ref(), ob.w.GetNamespace(), errStaleHash, a.Guard, hash, ob.ref(), ob.w.GetNamespace())
		}
		if a.Approved == hash {
			fmt.Fprintf(out, "%s already approved: %s=%s\n", ob.ref(), a.Annotation, hash)
			return nil
		}
		err = k.patchAnnotation(ctx, ob, a.Annotation, &hash)
		if errors.Is(err, errConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s approved: %s=%s\n", ob.ref(), a.Annotation, hash)
		return nil
	}
}
