package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// planFixture is a recorded plan with every kind of change the diff shows.
func planFixture() *infrav1.TerraformPlan {
	phaseTime := metav1.NewTime(now.Add(-3 * time.Minute))
	return &infrav1.TerraformPlan{
		ObjectMeta: metav1.ObjectMeta{Name: "captf-c-demo-plan-a1-0b4c1d", Namespace: "team-a",
			Labels: map[string]string{infrav1.PlanPhaseLabel: "Pending"}},
		Spec: infrav1.TerraformPlanSpec{
			TargetRef:      infrav1.PlanTargetReference{Kind: "TerraformCluster", Name: "demo", UID: "u-1"},
			Job:            "captf-c-demo-plan-a1-0b4c1d",
			InputsHash:     "h2:7cf6",
			PlanHash:       "p1:0b4c",
			Reason:         infrav1.TerraformPlanManual,
			RuntimeVersion: "1.10.6",
			Counts:         infrav1.PlanCounts{Add: 1, Change: 1, Destroy: 2, Outputs: 1},
			Changes: []infrav1.PlanResourceChange{
				{Address: "module.role.terraform_data.substrate", Actions: []string{"update"}, Label: "update", Attributes: []infrav1.PlanAttributeChange{
					{Path: "input.size", Before: ptr.To(`"small"`), After: ptr.To(`"large"`)},
					{Path: "input.token", Before: ptr.To(infrav1.SensitiveValue), After: ptr.To(infrav1.SensitiveValue), Sensitive: true},
					{Path: "output", Before: ptr.To(`{"a":1}`), After: ptr.To(infrav1.UnknownValue), Unknown: true},
					{Path: "tags.team", After: ptr.To(`"guard"`)},
					{Path: "tags.owner", Before: ptr.To(`"x"`)},
				}, OmittedAttributes: 2},
				{Address: "module.role.terraform_data.endpoint", Actions: []string{"delete", "create"}, Label: "replace", Attributes: []infrav1.PlanAttributeChange{
					{Path: "input", Before: ptr.To(`"` + strings.Repeat("a", 20) + `…`), After: ptr.To(`"b"`), Truncated: true},
				}},
				{Address: "module.role.terraform_data.new", Actions: []string{"create"}, Label: "create", Attributes: []infrav1.PlanAttributeChange{
					{Path: "id", After: ptr.To(infrav1.UnknownValue), Unknown: true},
				}},
			},
			Omitted: &infrav1.PlanOmitted{Resources: 1, Attributes: 2},
		},
		Status: infrav1.TerraformPlanStatus{Phase: infrav1.TerraformPlanPending, PhaseTime: &phaseTime},
	}
}

// TestPrintPlan checks plan show's diff of a TerraformPlan, plain and in
// colour.
func TestPrintPlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		color bool
	}{{"plan-show.golden", false}, {"plan-show-color.golden", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printPlan(&b, planFixture(), tc.color, now); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "\x1b[") != tc.color {
				t.Errorf("colour %v, yet escape codes present %v", tc.color, !tc.color)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
	t.Run("a destructive plan is approved by its inputs hash; a finished one has no approve line", func(t *testing.T) {
		rec := planFixture()
		rec.Spec.Reason = infrav1.TerraformPlanDestructive
		var b bytes.Buffer
		_ = printPlan(&b, rec, false, now)
		if !strings.Contains(b.String(), "--hash h2:7cf6 (writes "+infrav1.ApproveDestructivePlanAnnotation+")") {
			t.Errorf("no approve line with the inputs hash:\n%s", b.String())
		}
		rec.Status.Phase = infrav1.TerraformPlanApplied
		b.Reset()
		_ = printPlan(&b, rec, false, now)
		if strings.Contains(b.String(), "Approve it") {
			t.Errorf("an applied plan offers its approval:\n%s", b.String())
		}
	})
}

func TestPlanTargetAndColor(t *testing.T) {
	for arg, want := range map[string]string{
		"tfplan/p": "p", "TerraformPlan/p": "p", "terraformplans.infrastructure.cluster.x-k8s.io/p": "p",
		"tc/p": "", "tfplan/": "", "tfplan/a/b": "",
	} {
		if got, _ := planTarget(arg); got != want {
			t.Errorf("planTarget(%q) = %q, want %q", arg, got, want)
		}
	}
	var b bytes.Buffer
	for mode, want := range map[string]bool{"auto": false, "always": true, "never": false} {
		if got, err := colorOn(mode, &b); err != nil || got != want {
			t.Errorf("--color=%s on a buffer: %v %v, want %v", mode, got, err, want)
		}
	}
	if _, err := colorOn("rainbow", &b); err == nil {
		t.Error("--color=rainbow accepted")
	}
}
