package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// printed runs status's output flags with args over the bring-up's rows of
// namespace team-a, as status prints a listing.
func printed(t *testing.T, args ...string) (string, error) {
	t.Helper()
	f := newOutputFlags()
	cmd := &cobra.Command{Use: "status", RunE: func(*cobra.Command, []string) error { return nil }}
	f.addFlags(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return "", err
	}
	op, err := f.toOutput()
	if err != nil {
		return "", err
	}
	objs, js := bringUp()
	var rows []Row
	for _, r := range rowsFor(objs, js, settings) {
		if r.Namespace == "team-a" {
			rows = append(rows, r)
		}
	}
	var b bytes.Buffer
	err = printRows(&b, rows, op, now, false)
	return b.String(), err
}

func mustPrint(t *testing.T, args ...string) string {
	t.Helper()
	out, err := printed(t, args...)
	if err != nil {
		t.Fatalf("status %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestStatusOutputs checks status's -o formats, printed by cli-runtime's
// printers over the rows as objects: each names the object it shows, and
// carries the row's fields.
func TestStatusOutputs(t *testing.T) {
	group := infrav1.GroupVersion.Group
	t.Run("name", func(t *testing.T) {
		want := "terraformcluster." + group + "/demo\n" +
			"terraformmachine." + group + "/demo-cp-abcde\n" +
			"terraformmachine." + group + "/demo-md-fghij\n" +
			"terraformmachinepool." + group + "/demo-pool\n"
		if got := mustPrint(t, "-o", "name"); got != want {
			t.Errorf("-o name printed\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("jsonpath", func(t *testing.T) {
		got := mustPrint(t, "-o", `jsonpath={range .items[*]}{.metadata.name}={.ready}/{.waitingOn}{"\n"}{end}`)
		want := "demo=True/\ndemo-cp-abcde=False/apply Job demo-cp-abcde-m-apply-a1\ndemo-md-fghij=False/retry after ApplyFailed\ndemo-pool=False/WaitingForBootstrapData\n"
		if got != want {
			t.Errorf("-o jsonpath printed\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("jsonpath-as-json", func(t *testing.T) {
		var names []string
		if err := json.Unmarshal([]byte(mustPrint(t, "-o", "jsonpath-as-json={.items[*].kind}")), &names); err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "TerraformCluster,TerraformMachine,TerraformMachine,TerraformMachinePool" {
			t.Errorf("-o jsonpath-as-json printed %v", names)
		}
	})
	t.Run("custom-columns", func(t *testing.T) {
		got := mustPrint(t, "-o", "custom-columns=NAME:.metadata.name,LAST:.lastRun.outcome,NEXT:nextCheck")
		want := "NAME            LAST              NEXT\n" +
			"demo            succeeded         2026-03-01T12:08:53" // the drift check is due ten minutes after the last, jittered
		if !strings.HasPrefix(got, want) {
			t.Errorf("-o custom-columns printed\n%s\nwant it to start with\n%s", got, want)
		}
		if !strings.Contains(got, "demo-md-fghij   failed at apply   <none>") {
			t.Errorf("-o custom-columns printed\n%s\nwithout the failed machine's row", got)
		}
	})
	t.Run("custom-columns-file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cols")
		if err := os.WriteFile(path, []byte("NAME        READY\n.metadata.name .ready\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got := mustPrint(t, "-o", "custom-columns-file="+path)
		if !strings.HasPrefix(got, "NAME            READY\ndemo            True\n") {
			t.Errorf("-o custom-columns-file printed\n%s", got)
		}
	})
	t.Run("go-template", func(t *testing.T) {
		got := mustPrint(t, "-o", `go-template={{range .items}}{{.metadata.namespace}}/{{.metadata.name}} {{end}}`)
		if got != "team-a/demo team-a/demo-cp-abcde team-a/demo-md-fghij team-a/demo-pool " {
			t.Errorf("-o go-template printed %q", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		var l struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Items      []Row  `json:"items"`
		}
		if err := json.Unmarshal([]byte(mustPrint(t, "-o", "json")), &l); err != nil {
			t.Fatal(err)
		}
		if l.APIVersion != "v1" || l.Kind != "List" || len(l.Items) != 4 || l.Items[1].Active == nil || l.Items[1].Active.Job != "demo-cp-abcde-m-apply-a1" {
			t.Errorf("-o json printed %+v", l)
		}
	})
	t.Run("yaml", func(t *testing.T) {
		got := mustPrint(t, "-o", "yaml")
		for _, want := range []string{"kind: List", "  kind: TerraformMachinePool", "    name: demo-pool", "  waitingOn: WaitingForBootstrapData"} {
			if !strings.Contains(got, want+"\n") {
				t.Errorf("-o yaml lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("wide_is_the_table", func(t *testing.T) {
		if got := mustPrint(t, "-o", "wide"); !strings.HasPrefix(got, "NAME ") || !strings.Contains(got, "IMAGE") {
			t.Errorf("-o wide printed\n%s", got)
		}
		if got := mustPrint(t); !strings.HasPrefix(got, "NAME ") || strings.Contains(got, "IMAGE") {
			t.Errorf("the default printed\n%s", got)
		}
	})
	for name, args := range map[string][]string{
		"unknown":             {"-o", "toml"},
		"bare_custom_columns": {"-o", "custom-columns"},
		"bad_column":          {"-o", "custom-columns=NAME"},
		"bad_path":            {"-o", "custom-columns=NAME:.metadata[name"},
	} {
		t.Run("refuses_"+name, func(t *testing.T) {
			if _, err := printed(t, args...); err == nil {
				t.Errorf("-o %s printed without an error", args[1])
			}
		})
	}
}
