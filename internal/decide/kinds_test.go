package decide

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestKindCapabilities: each workload kind declares the capabilities the
// book gives it, named after the book's reason. The rules that read them
// are checked below and in the decision tables.
func TestKindCapabilities(t *testing.T) {
	for _, c := range []struct {
		rule string
		has  func(v1alpha1.Capabilities) bool
		// kinds are the kinds the rule holds for; it holds for no other.
		kinds []v1alpha1.WorkloadKind
	}{
		// Job Inputs: a TerraformCluster and a TerraformMachinePool are
		// mutable, a TerraformMachine is immutable (Cluster API replaces
		// it).
		{"mutable_inputs/cluster_and_pool_re-apply_a_machine_is_replaced",
			func(c v1alpha1.Capabilities) bool { return c.MutableInputs },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster, v1alpha1.KindTerraformMachinePool}},
		// The Reconcile Lifecycle, "Deletion order": a TerraformCluster
		// waits for its machines and pools.
		{"has_members/a_cluster_waits_for_its_machines_and_pools",
			func(c v1alpha1.Capabilities) bool { return c.HasMembers },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster}},
		// The Kinds, "What a cluster passes to its machines and pools".
		{"cluster_member/machines_and_pools_inherit_spec_defaults_never_the_cluster",
			func(c v1alpha1.Capabilities) bool { return c.ClusterMember },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachine, v1alpha1.KindTerraformMachinePool}},
		// The Reconcile Lifecycle, "Run leases and the cluster operation
		// gate".
		{"takes_cluster_lease/a_cluster_takes_the_write_lease",
			func(c v1alpha1.Capabilities) bool { return c.TakesClusterLease },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster}},
		// Plan Approval: neither guard applies to a machine or a pool.
		{"guards_applies/only_a_cluster_has_plan_approval_and_the_destructive-plan_guard",
			func(c v1alpha1.Capabilities) bool { return c.GuardsApplies },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster}},
		// Drift and Health: a machine or pool takes a refresh right after
		// each successful apply; none of these apply to a cluster.
		{"refreshes_after_apply/machine_and_pool",
			func(c v1alpha1.Capabilities) bool { return c.RefreshesAfterApply },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachine, v1alpha1.KindTerraformMachinePool}},
		// Machine Pools: membership refresh and convergence.
		{"refreshes_membership/a_pool",
			func(c v1alpha1.Capabilities) bool { return c.RefreshesMembership },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachinePool}},
		// Drift and Health: a pool's drift can never be turned off.
		{"drift_always_on/a_pool",
			func(c v1alpha1.Capabilities) bool { return c.DriftAlwaysOn },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachinePool}},
		// Machine Remediation.
		{"remediated/a_machine",
			func(c v1alpha1.Capabilities) bool { return c.Remediated },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachine}},
		// Contract - Machine Role, "Provisioned rule"; Drift and Health.
		{"provider_id_names_instance/a_machine",
			func(c v1alpha1.Capabilities) bool { return c.ProviderIDNamesInstance },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachine}},
		// Contract - Cluster Role, "Provisioned rule".
		{"provisioned_needs_valid_outputs/a_cluster",
			func(c v1alpha1.Capabilities) bool { return c.ProvisionedNeedsValidOutputs },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster}},
		// reference-facts §1.1: a pool keeps ApplyJobSucceeded in Ready.
		{"ready_reports_reapply/a_pool",
			func(c v1alpha1.Capabilities) bool { return c.ReadyReportsReapply },
			[]v1alpha1.WorkloadKind{v1alpha1.KindTerraformMachinePool}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			got := v1alpha1.KindsWith(c.has)
			if fmt.Sprint(got) != fmt.Sprint(c.kinds) {
				t.Fatalf("kinds with the capability: %v, want %v", got, c.kinds)
			}
		})
	}
	if (v1alpha1.WorkloadKind("Other").Capabilities() != v1alpha1.Capabilities{}) {
		t.Fatal("a name that is no workload kind has capabilities")
	}
	// A kind with members is a Cluster's infrastructure, a member belongs
	// to one: no kind is both, and exactly one kind has members (the one a
	// member finds through its Cluster's spec.infrastructureRef).
	if got := v1alpha1.KindsWith(func(c v1alpha1.Capabilities) bool { return c.HasMembers && c.ClusterMember }); len(got) != 0 {
		t.Fatalf("%v both have members and are members", got)
	}
	for _, k := range v1alpha1.WorkloadKinds() {
		if k.Capabilities() != k.NewObject().Capabilities() {
			t.Fatalf("%s: the kind's capabilities are not its objects'", k)
		}
	}
}

// TestCapabilityRules: each rule that differs between kinds follows the
// capability, whatever kind carries it. A set of capabilities no kind has
// today stands for a kind yet to come.
func TestCapabilityRules(t *testing.T) {
	mgr := 45 * time.Minute
	drift := func(own, def *int32) DriftSettings {
		return DriftSettings{IntervalSeconds: own, DefaultsIntervalSeconds: def, ManagerDefault: mgr}
	}
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"drift_always_on/interval_0_falls_back_to_the_manager_default",
			EffectiveDriftInterval(v1alpha1.Capabilities{DriftAlwaysOn: true}, drift(ptr.To[int32](0), nil)).Enabled, true},
		{"drift_always_on/without_it_interval_0_turns_drift_off",
			EffectiveDriftInterval(v1alpha1.Capabilities{}, drift(ptr.To[int32](0), nil)).Enabled, false},
		{"cluster_member/inherits_the_cluster's_interval",
			EffectiveDriftInterval(v1alpha1.Capabilities{ClusterMember: true}, drift(nil, ptr.To[int32](60))).Source, SourceClusterDefaults},
		{"cluster_member/without_it_the_defaults_are_never_its_own",
			EffectiveDriftInterval(v1alpha1.Capabilities{}, drift(nil, ptr.To[int32](60))).Source, SourceManagerDefault},
		{"mutable_inputs/Remediate_applies",
			EffectiveDriftAction(v1alpha1.Capabilities{MutableInputs: true}, DriftRemediate), DriftRemediate},
		{"mutable_inputs/an_immutable_kind_only_reports",
			EffectiveDriftAction(v1alpha1.Capabilities{}, DriftRemediate), DriftReport},
		{"provisioned/needs_valid_outputs",
			Provisioned(v1alpha1.Capabilities{ProvisionedNeedsValidOutputs: true}, false, ProvisionFacts{AppliedHash: true, ProviderIDSet: true}), false},
		{"provisioned/needs_a_provider_id",
			Provisioned(v1alpha1.Capabilities{ProviderIDNamesInstance: true}, false, ProvisionFacts{AppliedHash: true, OutputsValid: true}), false},
		{"provisioned/needing_both_has_both",
			Provisioned(v1alpha1.Capabilities{ProvisionedNeedsValidOutputs: true, ProviderIDNamesInstance: true}, false,
				ProvisionFacts{AppliedHash: true, OutputsValid: true, ProviderIDSet: true}), true},
		{"provisioned/needing_neither_latches_on_the_applied_hash",
			Provisioned(v1alpha1.Capabilities{}, false, ProvisionFacts{AppliedHash: true}), true},
		{"provider_id_names_instance/a_missing_provider_id_reads_ProviderIDMissing",
			InfrastructureHealthy(HealthFacts{Caps: v1alpha1.Capabilities{ProviderIDNamesInstance: true}, Provisioned: true,
				Sample: &HealthSample{State: HealthRunning, Healthy: true, ProviderIDMissing: true}}).Reason, reasonProviderIDMissing},
		{"ready_reports_reapply/keeps_ApplyJobSucceeded_after_provisioning",
			strings.Join(v1alpha1.KindTerraformMachinePool.ReadyConditions(true), ","),
			strings.Join([]string{v1alpha1.InfrastructureHealthyCondition, v1alpha1.ApplyJobSucceededCondition, v1alpha1.DeletingCondition}, ",")},
		{"ready_reports_reapply/a_cluster_keeps_health_and_deleting_only",
			strings.Join(v1alpha1.KindTerraformCluster.ReadyConditions(true), ","),
			strings.Join([]string{v1alpha1.InfrastructureHealthyCondition, v1alpha1.DeletingCondition}, ",")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("got %v, want %v", c.got, c.want)
			}
		})
	}

	// The decision follows the Observation's capabilities, not its kind: a
	// machine observed with a mutable kind's capabilities re-applies its
	// changed inputs, and a cluster observed without GuardsApplies applies
	// its changed inputs without a plan under applyPolicy Manual.
	o := steady(v1alpha1.KindTerraformMachine)
	o.Inputs, o.CurrentInputsHash = InputsBuilt, hashB
	if d := mustDecide(t, o); d.Op == OpApply {
		t.Fatalf("an immutable kind re-applied its changed inputs: %+v", d)
	}
	o.Caps.MutableInputs = true
	if d := mustDecide(t, o); d.Op != OpApply || d.Reason != ReasonInputsChanged {
		t.Fatalf("a mutable kind did not re-apply its changed inputs: %+v", d)
	}
	o = steady(v1alpha1.KindTerraformCluster)
	o.CurrentInputsHash, o.ApplyPolicy = hashB, ApplyManual
	if d := mustDecide(t, o); d.Op != OpPlan {
		t.Fatalf("a kind that guards its applies did not plan first under Manual: %+v", d)
	}
	o.Caps.GuardsApplies = false
	if d := mustDecide(t, o); d.Op != OpApply || d.Job.GuardDeletes {
		t.Fatalf("a kind that guards nothing did not apply unguarded: %+v", d)
	}
}

// kindNames are the workload kinds' names, as a string literal would
// carry them.
func kindNames() map[string]bool {
	m := map[string]bool{}
	for _, k := range v1alpha1.WorkloadKinds() {
		m[string(k)] = true
	}
	return m
}

// kindChecks lists every place in the non-test Go files of dir where the
// code names a workload kind to branch on it: a use of an
// api/v1alpha1 Kind* constant, a comparison with or a switch case on a
// workload kind's name, or a type switch case on a workload's API type.
func kindChecks(t *testing.T, dir string) []string {
	t.Helper()
	names := kindNames()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	isKindName := func(e ast.Expr) bool {
		// "TerraformCluster", or string(x.KindTerraformCluster) and the
		// like, which the constant rule below reports on its own.
		if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
			v, err := strconv.Unquote(l.Value)
			return err == nil && names[v]
		}
		return false
	}
	isWorkloadType := func(e ast.Expr) bool {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		return ok && names[sel.Sel.Name]
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name != "" && strings.HasPrefix(n.Sel.Name, "Kind") && names[strings.TrimPrefix(n.Sel.Name, "Kind")] {
					report(n, "names the workload kind "+n.Sel.Name)
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isKindName(n.X) || isKindName(n.Y)) {
					report(n, "compares with a workload kind's name")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isKindName(e) {
						report(e, "switches on a workload kind's name")
					}
				}
			case *ast.TypeSwitchStmt:
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if isWorkloadType(e) {
							report(e, "switches on a workload's API type")
						}
					}
				}
			}
			return true
		})
	}
	return found
}

// TestNoKindChecks: the decision and the shared reconcile flow branch on a
// kind's capabilities only (v1alpha1.Capabilities). A kind name, a
// comparison with one or a switch over the kinds in either package is a
// rule the compiler would not point to when a kind is added.
func TestNoKindChecks(t *testing.T) {
	for _, dir := range []string{".", filepath.Join("..", "lifecycle")} {
		if found := kindChecks(t, dir); len(found) > 0 {
			t.Errorf("kind checks in %s; branch on the kind's capabilities instead:\n%s", dir, strings.Join(found, "\n"))
		}
	}
}

// TestKindChecksAreFound: the walk that TestNoKindChecks relies on finds
// each form of kind check.
func TestKindChecksAreFound(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import infrav1 "example.com/api/v1alpha1"

func f(k infrav1.WorkloadKind, o any, s string) int {
	if k == infrav1.KindTerraformCluster {
		return 1
	}
	if s != "TerraformMachine" {
		return 2
	}
	switch s {
	case "TerraformMachinePool":
		return 3
	}
	switch o.(type) {
	case *infrav1.TerraformMachine:
		return 4
	}
	return 0
}
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	found := kindChecks(t, dir)
	want := []string{
		"x.go:6:10: names the workload kind KindTerraformCluster",
		"x.go:9:5: compares with a workload kind's name",
		"x.go:13:7: switches on a workload kind's name",
		"x.go:17:7: switches on a workload's API type",
	}
	for i := range found {
		found[i] = strings.TrimPrefix(found[i], dir+string(filepath.Separator))
	}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(want, "\n"))
	}
}

// ruleHead is a numbered rule's name: its text up to the first colon,
// period, comma or parenthesis.
func ruleHead(text string) string {
	if i := strings.IndexAny(text, ":.,("); i >= 0 {
		text = text[:i]
	}
	return strings.TrimSpace(text)
}

var numbered = regexp.MustCompile(`^\s*(\d+)\. (.*)$`)

// TestRuleNumbersAgree: the rules in decide.go carry the numbers and names
// the package documentation (doc.go) gives them, which are the book's: the
// order 1 to 7, then the schedule 1 to 7.
func TestRuleNumbersAgree(t *testing.T) {
	fset := token.NewFileSet()
	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	// The documented lists: a list starts again at 1.
	var lists [][]string
	for _, line := range strings.Split(doc.Doc.Text(), "\n") {
		m := numbered.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n == 1 {
			lists = append(lists, nil)
		}
		if len(lists) == 0 || n != len(lists[len(lists)-1])+1 {
			t.Fatalf("doc.go numbers %q out of sequence", line)
		}
		lists[len(lists)-1] = append(lists[len(lists)-1], ruleHead(m[2]))
	}
	if len(lists) != 2 {
		t.Fatalf("doc.go has %d numbered lists, want the order and the schedule", len(lists))
	}

	// The numbered comments of decide.go, by the function they sit in.
	src, err := parser.ParseFile(fset, "decide.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	inList := map[string]int{"decide": 0, "applyReason": 0, "schedule": 1}
	got := make([]map[int]string, 2)
	for i := range got {
		got[i] = map[int]string{}
	}
	for _, d := range src.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		list, ok := inList[fn.Name.Name]
		for _, cg := range src.Comments {
			if cg.Pos() < fn.Body.Lbrace || cg.End() > fn.Body.Rbrace {
				continue
			}
			m := numbered.FindStringSubmatch(strings.SplitN(cg.Text(), "\n", 2)[0])
			if m == nil {
				continue
			}
			if !ok {
				t.Errorf("%s: numbered rule %q outside decide, applyReason and schedule", fset.Position(cg.Pos()), m[0])
				continue
			}
			n, _ := strconv.Atoi(m[1])
			head := ruleHead(strings.Join(strings.Fields(cg.Text()), " ")[len(m[1])+2:])
			if n < 1 || n > len(lists[list]) {
				t.Errorf("%s: rule %d is not in doc.go's list", fset.Position(cg.Pos()), n)
				continue
			}
			if want := lists[list][n-1]; head != want {
				t.Errorf("%s: rule %d is %q in decide.go and %q in doc.go", fset.Position(cg.Pos()), n, head, want)
			}
			got[list][n] = head
		}
	}
	for i, l := range lists {
		for n := range l {
			if _, ok := got[i][n+1]; !ok {
				t.Errorf("doc.go's rule %d (%q) has no numbered comment in decide.go", n+1, l[n])
			}
		}
	}
}
