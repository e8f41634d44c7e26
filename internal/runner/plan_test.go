package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// planJSON builds a show -json document with the given resource changes
// (each a JSON object body) and output changes.
func planJSON(changes []string, outputs string) []byte {
	return []byte(`{"format_version":"1.2","terraform_version":"1.12.6","planned_values":{},` +
		`"resource_changes":[` + strings.Join(changes, ",") + `],` +
		`"output_changes":{` + outputs + `},"configuration":{}}`)
}

func rc(addr, actions string, extra ...string) string {
	s := fmt.Sprintf(`{"address":%q,"mode":"managed","type":"terraform_data","name":"x","change":{"actions":[%s],"before":{"input":"SENTINEL-before"},"after":{"input":"SENTINEL-after"}`, addr, actions)
	for _, e := range extra {
		if strings.HasPrefix(e, "importing") {
			s += `,"importing":{"id":"i-1"}`
		}
	}
	s += "}"
	for _, e := range extra {
		if p, ok := strings.CutPrefix(e, "prev="); ok {
			s += fmt.Sprintf(`,"previous_address":%q`, p)
		}
		if k, ok := strings.CutPrefix(e, "deposed="); ok {
			s += fmt.Sprintf(`,"deposed":%q`, k)
		}
	}
	return s + "}"
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "p1:" + hex.EncodeToString(h[:])
}

func analyze(t *testing.T, changes []string, outputs string) PlanAnalysis {
	t.Helper()
	p, err := ParsePlan(planJSON(changes, outputs))
	if err != nil {
		t.Fatalf("ParsePlan: %v", err)
	}
	return AnalyzePlan(p)
}

func TestPlanHash(t *testing.T) {
	t.Run("the empty plan hashes as sha256 of the empty string", func(t *testing.T) {
		if EmptyPlanHash != sha("") {
			t.Errorf("EmptyPlanHash = %s", EmptyPlanHash)
		}
		if a := AnalyzePlan(nil); a.Hash != EmptyPlanHash {
			t.Errorf("nil plan hash %s", a.Hash)
		}
		if a := analyze(t, []string{rc("terraform_data.a", `"no-op"`)}, ""); a.Hash != EmptyPlanHash {
			t.Errorf("a plan of no-ops hashes %s, want the empty hash", a.Hash)
		}
	})

	t.Run("p1: plus sha256 of the sorted address|actions lines", func(t *testing.T) {
		a := analyze(t, []string{
			rc("terraform_data.b", `"delete","create"`),
			rc("terraform_data.a", `"update"`),
		}, "")
		want := sha("terraform_data.a|update\nterraform_data.b|delete,create\n")
		if a.Hash != want {
			t.Errorf("hash %s, want %s", a.Hash, want)
		}
	})

	t.Run("the hash ignores values: the same resources and actions hash the same", func(t *testing.T) {
		one := analyze(t, []string{rc("terraform_data.a", `"update"`)}, "")
		two := analyze(t, []string{strings.ReplaceAll(rc("terraform_data.a", `"update"`), "SENTINEL-after", "other")}, "")
		if one.Hash != two.Hash {
			t.Errorf("hashes differ on values alone")
		}
	})

	t.Run("the hash changes with the action", func(t *testing.T) {
		upd := analyze(t, []string{rc("terraform_data.a", `"update"`)}, "")
		rep := analyze(t, []string{rc("terraform_data.a", `"create","delete"`)}, "")
		if upd.Hash == rep.Hash {
			t.Errorf("update and replace hash the same")
		}
	})

	t.Run("order of resource_changes does not matter", func(t *testing.T) {
		x := analyze(t, []string{rc("a.x", `"create"`), rc("b.y", `"delete"`)}, "")
		y := analyze(t, []string{rc("b.y", `"delete"`), rc("a.x", `"create"`)}, "")
		if x.Hash != y.Hash {
			t.Errorf("order changed the hash")
		}
	})
}

func TestAnalyzePlan(t *testing.T) {
	a := analyze(t, []string{
		rc("terraform_data.create", `"create"`),
		rc("terraform_data.update", `"update"`),
		rc("terraform_data.delete", `"delete"`),
		rc("terraform_data.replace_dbc", `"delete","create"`),
		rc("terraform_data.replace_cbd", `"create","delete"`),
		rc("data.external.read", `"read"`),
		rc("terraform_data.noop", `"no-op"`),
		rc("terraform_data.imported", `"no-op"`, "importing"),
		rc("terraform_data.moved", `"no-op"`, "prev=terraform_data.old"),
		rc("terraform_data.upd_import", `"update"`, "importing"),
		rc("terraform_data.forget", `"forget"`),
		rc("terraform_data.old_dep", `"delete"`, "deposed=abcd1234"),
	}, `"a":{"actions":["update"],"before":"x","after":"y"},"b":{"actions":["no-op"],"before":"x","after":"x"}`)

	t.Run("counts: a replacement adds and destroys, reads and no-ops count nowhere", func(t *testing.T) {
		if a.Add != 3 || a.Change != 2 || a.Destroy != 4 {
			t.Errorf("add/change/destroy = %d/%d/%d, want 3/2/4", a.Add, a.Change, a.Destroy)
		}
		if a.Import != 2 || a.Move != 1 || a.Outputs != 1 {
			t.Errorf("import/move/outputs = %d/%d/%d, want 2/1/1", a.Import, a.Move, a.Outputs)
		}
	})

	t.Run("labels: create, update, delete, replace, read, forget; import or move only with no other action", func(t *testing.T) {
		want := []string{
			"data.external.read (read)",
			"terraform_data.create (create)",
			"terraform_data.delete (delete)",
			"terraform_data.forget (forget)",
			"terraform_data.imported (import)",
			"terraform_data.moved (move)",
			"terraform_data.old_dep (deposed abcd1234) (delete)",
			"terraform_data.replace_cbd (replace)",
			"terraform_data.replace_dbc (replace)",
			"terraform_data.upd_import (update)",
			"terraform_data.update (update)",
		}
		got := Labeled(a.Changes)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("labels:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("the guard sees deletes and replacements in either order, nothing else", func(t *testing.T) {
		var got []string
		for _, c := range a.Destructive() {
			got = append(got, c.Address)
		}
		want := "terraform_data.delete,terraform_data.old_dep (deposed abcd1234),terraform_data.replace_cbd,terraform_data.replace_dbc"
		if strings.Join(got, ",") != want {
			t.Errorf("destructive = %v", got)
		}
	})

	t.Run("the hash lines carry import and move", func(t *testing.T) {
		lines := []string{}
		for _, c := range a.Changes {
			lines = append(lines, c.Address+"|"+strings.Join(c.Actions, ","))
		}
		joined := strings.Join(lines, "\n")
		for _, want := range []string{"terraform_data.imported|import", "terraform_data.moved|move", "terraform_data.upd_import|update,import"} {
			if !strings.Contains(joined, want) {
				t.Errorf("no line %q in\n%s", want, joined)
			}
		}
	})

	t.Run("nothing of a value reaches the summaries", func(t *testing.T) {
		p := a.ResultPlan()
		d := a.ResultDrift(true)
		s := fmt.Sprintf("%+v %+v %s", *p, *d, a.CountsText())
		if strings.Contains(s, "SENTINEL") {
			t.Errorf("a value leaked: %s", s)
		}
	})
}

func TestResultSummaries(t *testing.T) {
	var changes []string
	for i := range 60 {
		changes = append(changes, rc(fmt.Sprintf("terraform_data.r%02d", i), `"create"`))
	}
	a := analyze(t, changes, "")

	t.Run("plan: at most 50 resources, sorted, and truncated says so", func(t *testing.T) {
		p := a.ResultPlan()
		if len(p.Resources) != result.MaxPlanResources || !p.Truncated {
			t.Errorf("%d resources, truncated %v", len(p.Resources), p.Truncated)
		}
		if p.Resources[0] != "terraform_data.r00 (create)" || p.Hash != a.Hash || p.Add != 60 {
			t.Errorf("plan %+v", p)
		}
	})

	t.Run("drift: at most 20 addresses and the counts", func(t *testing.T) {
		d := a.ResultDrift(true)
		if len(d.Resources) != result.MaxDriftResources || d.Add != 60 || !d.Detected {
			t.Errorf("drift %+v", d)
		}
		if d.Resources[0] != "terraform_data.r00" {
			t.Errorf("drift lists %q, want a bare address", d.Resources[0])
		}
	})

	t.Run("an empty plan has no resource list", func(t *testing.T) {
		p := AnalyzePlan(nil).ResultPlan()
		if p.Resources != nil || p.Truncated || p.Hash != EmptyPlanHash {
			t.Errorf("%+v", p)
		}
	})
}

func TestParsePlanErrors(t *testing.T) {
	if _, err := ParsePlan([]byte("not json")); err == nil {
		t.Error("ParsePlan accepted garbage")
	}
	if _, err := ParsePlan([]byte(`{"format_version":"9.0"}`)); err == nil {
		t.Error("ParsePlan accepted an unsupported format version")
	}
}

func BenchmarkAnalyzePlan(b *testing.B) {
	var changes []string
	for i := range 500 {
		changes = append(changes, rc(fmt.Sprintf("module.role.terraform_data.r%03d", i), `"update"`))
	}
	doc := planJSON(changes, "")
	b.ReportAllocs()
	for b.Loop() {
		p, err := ParsePlan(doc)
		if err != nil {
			b.Fatal(err)
		}
		_ = AnalyzePlan(p)
	}
}
