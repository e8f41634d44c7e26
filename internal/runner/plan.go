package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// PlanHashPrefix prefixes every plan hash this runner computes.
const PlanHashPrefix = "p1:"

// EmptyPlanHash is the hash of a plan with no resource changes; such a plan
// never needs an approval.
var EmptyPlanHash = PlanHash(nil)

// PlanChange is one non-no-op resource change of a plan.
type PlanChange struct {
	// Address of the resource instance (with " (deposed <key>)" for a
	// deposed object).
	Address string
	// Actions are the planned actions without "no-op", followed by
	// "import" and "move" when the change imports or moves the resource.
	Actions []string
	// Label is the one-word label shown to people: create, update, delete,
	// replace, read, forget, or import/move for a change with no other
	// action.
	Label string
	// Destructive is true for a delete or a replacement in either order.
	Destructive bool
}

// PlanAnalysis is everything the runner reads from a plan.
type PlanAnalysis struct {
	// Changes are sorted by address, then actions.
	Changes []PlanChange
	Hash    string
	Add     int
	Change  int
	Destroy int
	Import  int
	Move    int
	Outputs int
}

// ParsePlan decodes show -json output. The document is held in memory
// only; what leaves this package is addresses and actions, and the plan
// detail (PlanDetail), whose sensitive values are masked.
func ParsePlan(b []byte) (*tfjson.Plan, error) {
	var p tfjson.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading the plan from show -json: %w", err)
	}
	return &p, nil
}

// AnalyzePlan classifies every resource change of p, counts them and
// computes the plan hash. A nil plan is the empty plan.
func AnalyzePlan(p *tfjson.Plan) PlanAnalysis {
	var a PlanAnalysis
	if p != nil {
		for _, rc := range p.ResourceChanges {
			c, ok := classify(rc)
			if !ok {
				continue
			}
			a.Changes = append(a.Changes, c)
			acts := rc.Change.Actions
			switch {
			case acts.Replace():
				a.Add++
				a.Destroy++
			case acts.Create():
				a.Add++
			case acts.Update():
				a.Change++
			case acts.Delete():
				a.Destroy++
			}
			if rc.Change.Importing != nil {
				a.Import++
			}
			if moved(rc) {
				a.Move++
			}
		}
		for _, oc := range p.OutputChanges {
			if oc != nil && !oc.Actions.NoOp() && len(oc.Actions) > 0 {
				a.Outputs++
			}
		}
	}
	sort.Slice(a.Changes, func(i, j int) bool {
		if a.Changes[i].Address != a.Changes[j].Address {
			return a.Changes[i].Address < a.Changes[j].Address
		}
		return strings.Join(a.Changes[i].Actions, ",") < strings.Join(a.Changes[j].Actions, ",")
	})
	a.Hash = PlanHash(a.Changes)
	return a
}

// PlanHash is "p1:" followed by the sha256 hex of the sorted lines
// "<address>|<actions>" (actions comma-joined), each ending in a newline.
// It covers which resources change and how, never the values: two plans
// that touch the same resources in the same way hash the same.
func PlanHash(changes []PlanChange) string {
	lines := make([]string, len(changes))
	for i, c := range changes {
		lines[i] = c.Address + "|" + strings.Join(c.Actions, ",") + "\n"
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return PlanHashPrefix + hex.EncodeToString(h.Sum(nil))
}

func classify(rc *tfjson.ResourceChange) (PlanChange, bool) {
	if rc == nil || rc.Change == nil {
		return PlanChange{}, false
	}
	var actions []string
	for _, act := range rc.Change.Actions {
		if act != tfjson.ActionNoop {
			actions = append(actions, string(act))
		}
	}
	label := ""
	acts := rc.Change.Actions
	switch {
	case acts.Replace():
		label = "replace"
	case acts.Create():
		label = "create"
	case acts.Update():
		label = "update"
	case acts.Delete():
		label = "delete"
	case acts.Read():
		label = "read"
	case len(acts) == 1 && acts[0] == tfjson.ActionForget:
		label = "forget"
	case len(actions) > 0:
		label = strings.Join(actions, "-")
	}
	if rc.Change.Importing != nil {
		actions = append(actions, "import")
		if label == "" {
			label = "import"
		}
	}
	if moved(rc) {
		actions = append(actions, "move")
		if label == "" {
			label = "move"
		}
	}
	if len(actions) == 0 {
		return PlanChange{}, false
	}
	addr := rc.Address
	if rc.DeposedKey != "" {
		addr = fmt.Sprintf("%s (deposed %s)", addr, rc.DeposedKey)
	}
	return PlanChange{
		Address:     addr,
		Actions:     actions,
		Label:       label,
		Destructive: acts.Delete() || acts.Replace(),
	}, true
}

func moved(rc *tfjson.ResourceChange) bool {
	return rc.PreviousAddress != "" && rc.PreviousAddress != rc.Address
}

// Destructive returns the changes that delete or replace a resource.
func (a PlanAnalysis) Destructive() []PlanChange {
	var out []PlanChange
	for _, c := range a.Changes {
		if c.Destructive {
			out = append(out, c)
		}
	}
	return out
}

// Labeled returns "<address> (<label>)" for each change, sorted.
func Labeled(changes []PlanChange) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = fmt.Sprintf("%s (%s)", c.Address, c.Label)
	}
	sort.Strings(out)
	return out
}

// ResultPlan is the plan summary of the result document: the hash, the
// counts and at most result.MaxPlanResources labeled resources.
func (a PlanAnalysis) ResultPlan() *result.Plan {
	p := &result.Plan{
		Hash:    a.Hash,
		Add:     a.Add,
		Change:  a.Change,
		Destroy: a.Destroy,
		Outputs: a.Outputs,
		Import:  a.Import,
		Move:    a.Move,
	}
	res := Labeled(a.Changes)
	if len(res) > result.MaxPlanResources {
		res = res[:result.MaxPlanResources]
		p.Truncated = true
	}
	if len(res) > 0 {
		p.Resources = res
	}
	return p
}

// ResultDrift is the drift summary of the result document: detected, the
// counts and at most result.MaxDriftResources addresses.
func (a PlanAnalysis) ResultDrift(detected bool) *result.Drift {
	d := &result.Drift{Detected: detected, Add: a.Add, Change: a.Change, Destroy: a.Destroy}
	seen := map[string]bool{}
	for _, c := range a.Changes {
		if len(d.Resources) == result.MaxDriftResources {
			break
		}
		if !seen[c.Address] {
			seen[c.Address] = true
			d.Resources = append(d.Resources, c.Address)
		}
	}
	return d
}

// CountsText is the counts-only plan line used in events and logs.
func (a PlanAnalysis) CountsText() string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", a.Add, a.Change, a.Destroy)
	if a.Import > 0 {
		s += fmt.Sprintf(", %d to import", a.Import)
	}
	if a.Move > 0 {
		s += fmt.Sprintf(", %d to move", a.Move)
	}
	if a.Outputs > 0 {
		s += fmt.Sprintf(", %d output(s) to change", a.Outputs)
	}
	return s
}
