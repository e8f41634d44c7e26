package verify

import (
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// A reason in events.md or conditions.md is only true when CAPTF's code
// uses it: an event reason must reach an event a recorder sends, a
// condition reason must reach a condition's Reason. The documentation
// tests compare the pages with the constants; the checks below compare the
// constants with what cmd/ and internal/ (test files excluded) really pass
// along (flow_test.go).

// notYetEmitted are the *Event reasons no code emits yet: none.
// TestDocsEventsMatchAPI fails for an event that is neither emitted nor
// listed here, and for an entry here that is emitted (remove it then).
var notYetEmitted = []string{}

// notYetSet are the *Reason condition reasons no code sets on a condition
// yet: none. TestDocsConditionsMatchAPI fails for an entry that is set.
var notYetSet = []string{}

// docsFlowPatterns are the packages whose code counts: CAPTF's binaries
// and everything they run.
var docsFlowPatterns = []string{"./cmd/...", "./internal/..."}

var docsFlowPrefixes = []string{flowModule + "/cmd", flowModule + "/internal"}

var (
	docsFlowOnce  sync.Once
	docsFlowGraph *flowGraph
	docsFlowErr   error
)

// docsRepoFlow is the flow graph of the repository's code, built once.
func docsRepoFlow(t *testing.T) *flowGraph {
	t.Helper()
	r := docsRoot(t)
	docsFlowOnce.Do(func() {
		prog, err := flowLoad(r, nil, docsFlowPatterns...)
		if err != nil {
			docsFlowErr = err
			return
		}
		docsFlowGraph = flowGraphOf(prog, docsFlowPrefixes...)
	})
	if docsFlowErr != nil {
		t.Fatal(docsFlowErr)
	}
	return docsFlowGraph
}

// docsEventSink: where an event's reason leaves CAPTF, the reason
// parameter of client-go's event recorders and the Reason of an Event
// object built by hand (the runner posts its own).
func docsEventSink(v *types.Var, owner string) bool {
	switch owner {
	case "k8s.io/api/events/v1.Event", "k8s.io/api/core/v1.Event":
		return v.Name() == "Reason"
	case "":
		if v.Pkg() == nil || v.Name() != "reason" {
			return false
		}
		switch v.Pkg().Path() {
		case "k8s.io/client-go/tools/events", "k8s.io/client-go/tools/internal/events", "k8s.io/client-go/tools/record":
			return true
		}
	}
	return false
}

// docsConditionSink: where a condition's reason leaves CAPTF, the Reason
// of a condition, a reason parameter of Cluster API's condition helpers,
// and the result of a reason function handed to the summary.
func docsConditionSink(v *types.Var, owner string) bool {
	switch owner {
	case "k8s.io/apimachinery/pkg/apis/meta/v1.Condition", "sigs.k8s.io/cluster-api/api/core/v1beta1.Condition":
		return v.Name() == "Reason"
	case "sigs.k8s.io/cluster-api/util/conditions.ComputeReasonFunc":
		return true
	case "":
		return v.Pkg() != nil && v.Name() == "reason" && strings.HasPrefix(v.Pkg().Path(), "sigs.k8s.io/cluster-api/util/conditions")
	}
	return false
}

// docsCheckUsed reports each constant of apiDir with one of suffix whose
// value is not in used, unless allowed lists it, and each allowed entry
// that is used or not a constant at all. what names the constants in the
// messages ("event reason"), verb what the code does with them ("emits").
func docsCheckUsed(apiDir string, used map[string]bool, suffix, what, verb, allowName string, allowed []string) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	allow := map[string]bool{}
	for _, a := range allowed {
		allow[a] = true
	}
	var problems []string
	declared := map[string]bool{}
	for _, c := range docsWithSuffix(consts, suffix) {
		declared[c.Value] = true
		switch {
		case !used[c.Value] && !allow[c.Value]:
			problems = append(problems, fmt.Sprintf("%s %q (constant %s, api/v1alpha1/%s) is declared but no code in cmd/ or internal/ %s it: use it, or remove the constant and its row",
				what, c.Value, c.Name, c.Pos, verb))
		case used[c.Value] && allow[c.Value]:
			problems = append(problems, fmt.Sprintf("%s %q (constant %s) is in %s, but the code now %s it: remove it from the list",
				what, c.Value, c.Name, allowName, verb))
		}
	}
	sorted := append([]string(nil), allowed...)
	sort.Strings(sorted)
	for _, a := range sorted {
		if !declared[a] {
			problems = append(problems, fmt.Sprintf("%s lists %q, which is no *%s constant of api/v1alpha1: remove it", allowName, a, suffix))
		}
	}
	return problems, nil
}

func docsCheckEmitted(apiDir string, g *flowGraph, allowed []string) ([]string, error) {
	return docsCheckUsed(apiDir, g.flowReaching(docsEventSink), "Event", "event reason", "emits", "notYetEmitted", allowed)
}

func docsCheckSet(apiDir string, g *flowGraph, allowed []string) ([]string, error) {
	return docsCheckUsed(apiDir, g.flowReaching(docsConditionSink), "Reason", "condition reason", "sets", "notYetSet", allowed)
}

// TestDocsEmissionChecksCatchUnusedNames proves the checks of
// TestDocsEventsMatchAPI and TestDocsConditionsMatchAPI fail for a reason
// the code declares but does not use: a new constant nobody names, a
// constant still named but no longer passed as an event's reason or set as
// a condition's (only compared, or passed as a message), and an allow-list
// entry that is used or not declared.
func TestDocsEmissionChecksCatchUnusedNames(t *testing.T) {
	r := docsRoot(t)
	api := t.TempDir()
	srcs, _ := filepath.Glob(filepath.Join(r, "api", "v1alpha1", "*.go"))
	for _, s := range srcs {
		if !strings.HasSuffix(s, "_test.go") {
			docsCopyFile(t, s, filepath.Join(api, filepath.Base(s)))
		}
	}
	docsWriteFile(t, filepath.Join(api, "zz_extra.go"), "package v1alpha1\n\nconst (\n"+
		"\tFrobnicatedEvent = \"Frobnicated\"\n"+
		"\tFrobnicatedReason = \"Frobnicated\"\n"+
		")\n")

	overlay := map[string]string{}
	edit := func(rel string, edits ...[2]string) {
		p := filepath.Join(r, filepath.FromSlash(rel))
		s, ok := overlay[p]
		if !ok {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s = string(b)
		}
		for _, e := range edits {
			if !strings.Contains(s, e[0]) {
				t.Fatalf("%s lacks %q, which this test edits", rel, e[0])
			}
			s = strings.ReplaceAll(s, e[0], e[1])
		}
		overlay[p] = s
	}
	// The event constant stays referenced, as a message: not an emission.
	edit("internal/identity/identitystatus.go",
		[2]string{"normalEvent(infrav1.IdentitySecretFoundEvent, next.Message)", "normalEvent(infrav1.SecretFoundReason, infrav1.IdentitySecretFoundEvent)"})
	// The reason constant stays referenced in comparisons: not a condition.
	edit("internal/identity/resolve.go",
		[2]string{"c.Status, c.Reason = metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason", "c.Status, c.Reason = metav1.ConditionFalse, infrav1.IdentityCheckFailedReason"})

	prog, err := flowLoad(r, overlay, docsFlowPatterns...)
	if err != nil {
		t.Fatal(err)
	}
	g := flowGraphOf(prog, docsFlowPrefixes...)

	problems, err := docsCheckEmitted(api, g, append([]string{"JobCreated", "Frobnicating"}, notYetEmitted...))
	if err != nil {
		t.Fatal(err)
	}
	docsExpectProblems(t, "events", problems,
		`event reason "Frobnicated" (constant FrobnicatedEvent`,
		`event reason "IdentitySecretFound" (constant IdentitySecretFoundEvent`,
		`event reason "JobCreated" (constant JobCreatedEvent) is in notYetEmitted, but the code now emits it`,
		`notYetEmitted lists "Frobnicating"`,
	)

	problems, err = docsCheckSet(api, g, append([]string{"StateRead"}, notYetSet...))
	if err != nil {
		t.Fatal(err)
	}
	docsExpectProblems(t, "reasons", problems,
		`condition reason "Frobnicated" (constant FrobnicatedReason`,
		`condition reason "NamespaceNotAllowed" (constant NamespaceNotAllowedReason`,
		`condition reason "StateRead" (constant StateReadReason) is in notYetSet, but the code now sets it`,
	)
}
