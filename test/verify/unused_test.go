package verify

import (
	"os/exec"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestNoCodeOnlyTestsReach runs staticcheck's unused-code check over the
// module without its tests, as make verify does: a function, field or
// constant that only a test reaches is code the manager, the runner or the
// linter never runs, and fails here.
func TestNoCodeOnlyTestsReach(t *testing.T) {
	sc, err := tools.Path("staticcheck")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sc, "-tests=false", "-checks", "U1000", "./...")
	cmd.Dir = root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("staticcheck -tests=false -checks U1000: %v\n%s", err, b)
	}
}
