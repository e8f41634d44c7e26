package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestImportsNoClusterClients keeps the decision core pure: nothing in its
// import graph may come from client-go or controller-runtime.
func TestImportsNoClusterClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=ImportPath", ".")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, stderr.String())
	}
	forbidden := []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}
	dec := json.NewDecoder(bytes.NewReader(out))
	n := 0
	for {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		n++
		for _, f := range forbidden {
			if p.ImportPath == f || strings.HasPrefix(p.ImportPath, f+"/") {
				t.Errorf("internal/decide depends on %s", p.ImportPath)
			}
		}
	}
	if n == 0 {
		t.Fatal("go list reported no packages")
	}
}
