package lint

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestVersion: version --json lists the supported contracts, ["v1alpha1"]
// (book: tfcapi-lint "Install"); --version prints the version.
func TestVersion(t *testing.T) {
	code, out, _ := run("version", "--json")
	var v struct {
		Version   string   `json:"version"`
		Contracts []string `json:"contracts"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if !slices.Equal(v.Contracts, []string{"v1alpha1"}) || v.Version == "" {
		t.Errorf("version --json = %+v", v)
	}
	if code, out, _ := run("version"); code != ExitOK || !strings.Contains(out, "v1alpha1") {
		t.Errorf("version: exit %d %q", code, out)
	}
	if code, out, _ := run("--version"); code != ExitOK || !strings.HasPrefix(out, "tfcapi-lint ") {
		t.Errorf("--version: exit %d %q", code, out)
	}
	if code, _, _ := run("version", "extra"); code != ExitUsage {
		t.Errorf("version extra: exit %d", code)
	}
}
