package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// planResource is the TerraformPlan resource.
var planResource = infrav1.GroupVersion.WithResource("terraformplans")

// planTarget says whether arg names a TerraformPlan (tfplan/NAME,
// terraformplan/NAME, terraformplans/NAME, optionally with the group),
// and its name.
func planTarget(arg string) (string, bool) {
	k, name, ok := strings.Cut(arg, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	k = strings.TrimSuffix(strings.ToLower(k), "."+infrav1.GroupVersion.Group)
	switch k {
	case "tfplan", "terraformplan", "terraformplans":
		return name, true
	}
	return "", false
}

// getPlan reads one TerraformPlan.
func (k *kube) getPlan(ctx context.Context, ns, name string) (*infrav1.TerraformPlan, error) {
	u, err := k.dyn.Resource(planResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, explain(err, "terraformplan/"+name, ns)
	}
	rec := &infrav1.TerraformPlan{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rec); err != nil {
		return nil, fmt.Errorf("terraformplan/%s in namespace %s is not a TerraformPlan this plugin reads: %w", name, ns, err)
	}
	return rec, nil
}

// planOf is the record of the plan an object waits on: the one of the
// approval's Job, else nil. A user who may not list TerraformPlans gets
// the approval alone.
func (k *kube) planOf(ctx context.Context, ob object, a *Approval) *infrav1.TerraformPlan {
	if a == nil || a.Job == "" {
		return nil
	}
	rec, err := k.getPlan(ctx, ob.w.GetNamespace(), a.Job)
	if err != nil {
		return nil
	}
	// The owner reference follows the object through clusterctl move;
	// spec.targetRef.uid keeps the UID it had when the plan was recorded.
	for _, ref := range rec.OwnerReferences {
		if ref.UID == ob.w.GetUID() {
			return rec
		}
	}
	return nil
}

// colorMode is --color: auto colours only a terminal.
func colorOn(mode string, out io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		f, ok := out.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())), nil
	}
	return false, fmt.Errorf("unknown --color %q: use auto, always or never", mode)
}

// ANSI styles.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

type painter bool

func (p painter) paint(style, s string) string {
	if !p {
		return s
	}
	return style + s + ansiReset
}

// labelSign is the sign of a resource change as the runtime prints it.
func labelSign(label string) (string, string) {
	switch label {
	case "create":
		return "+", ansiGreen
	case "delete":
		return "-", ansiRed
	case "replace":
		return "-/+", ansiRed
	case "read":
		return "<=", ansiCyan
	}
	return "~", ansiYellow
}

// approvalOf is how a record is approved: the annotation and the hash.
func approvalOf(rec *infrav1.TerraformPlan) (string, string) {
	if rec.Spec.Reason == infrav1.TerraformPlanDestructive {
		return infrav1.ApproveDestructivePlanAnnotation, rec.Spec.InputsHash
	}
	return infrav1.ApprovePlanAnnotation, rec.Spec.PlanHash
}

// countsText is the plan's counts as one line.
func countsText(c infrav1.PlanCounts) string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", c.Add, c.Change, c.Destroy)
	for _, extra := range []struct {
		n    int32
		what string
	}{{c.Import, "to import"}, {c.Move, "to move"}, {c.Outputs, "output(s) to change"}} {
		if extra.n > 0 {
			s += fmt.Sprintf(", %d %s", extra.n, extra.what)
		}
	}
	return s
}

// printPlan renders a TerraformPlan as a diff a person reads: its header,
// per resource the action and the attributes with before → after (masked
// values as recorded), and what the record leaves out. Pure.
func printPlan(out io.Writer, rec *infrav1.TerraformPlan, color bool, now time.Time) error {
	p := painter(color)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	s := rec.Spec
	fmt.Fprintf(tw, "TerraformPlan:\t%s (namespace %s)\n", rec.Name, rec.Namespace)
	fmt.Fprintf(tw, "Target:\t%s/%s\n", strings.ToLower(s.TargetRef.Kind), s.TargetRef.Name)
	fmt.Fprintf(tw, "Reason:\t%s\n", s.Reason)
	phase := string(rec.Status.Phase)
	if phase == "" {
		phase = rec.Labels[infrav1.PlanPhaseLabel]
	}
	if rec.Status.PhaseTime != nil {
		t := rec.Status.PhaseTime.Time
		phase += " (" + age(&t, now) + " ago)"
	}
	fmt.Fprintf(tw, "Phase:\t%s\n", phase)
	fmt.Fprintf(tw, "Plan hash:\t%s\n", s.PlanHash)
	fmt.Fprintf(tw, "Inputs hash:\t%s\n", s.InputsHash)
	fmt.Fprintf(tw, "Job:\t%s\n", s.Job)
	if s.RuntimeVersion != "" {
		fmt.Fprintf(tw, "Runtime:\t%s\n", s.RuntimeVersion)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	changes := append([]infrav1.PlanResourceChange(nil), s.Changes...)
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Address < changes[j].Address })
	for _, c := range changes {
		sign, style := labelSign(c.Label)
		fmt.Fprintf(out, "%s %s\n", p.paint(style, sign), p.paint(ansiBold, c.Address+" ("+c.Label+")"))
		for _, a := range c.Attributes {
			fmt.Fprintf(out, "    %s\n", attributeLine(p, a))
		}
		if c.OmittedAttributes > 0 {
			fmt.Fprintf(out, "    ... %d more changed attribute(s) left out\n", c.OmittedAttributes)
		}
	}
	if len(changes) > 0 {
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "%s %s\n", p.paint(ansiBold, "Plan:"), countsText(s.Counts))
	if o := s.Omitted; o != nil && (o.Resources > 0 || o.Attributes > 0) {
		fmt.Fprintf(out, "Left out to keep the record within its size: %d resource(s), %d attribute(s)\n", o.Resources, o.Attributes)
	}
	if s.Note != "" {
		fmt.Fprintf(out, "Note: %s\n", s.Note)
	}
	if rec.Status.Phase == infrav1.TerraformPlanPending {
		key, hash := approvalOf(rec)
		fmt.Fprintf(out, "Approve it: kubectl captf plan approve %s/%s -n %s --hash %s (writes %s)\n",
			strings.ToLower(s.TargetRef.Kind), s.TargetRef.Name, rec.Namespace, hash, key)
	}
	return nil
}

// attributeLine is "+ path = after", "- path = before" or
// "~ path = before → after", with its flags.
func attributeLine(p painter, a infrav1.PlanAttributeChange) string {
	var line string
	switch {
	case a.Before == nil && a.After != nil:
		line = p.paint(ansiGreen, "+") + " " + a.Path + " = " + *a.After
	case a.After == nil && a.Before != nil:
		line = p.paint(ansiRed, "-") + " " + a.Path + " = " + *a.Before
	case a.Before != nil:
		line = p.paint(ansiYellow, "~") + " " + a.Path + " = " + *a.Before + " → " + *a.After
	default:
		line = p.paint(ansiYellow, "~") + " " + a.Path
	}
	if a.Truncated {
		line += " (value cut)"
	}
	return line
}
