// Command runner is CAPTF's in-Job binary: the init container copies it into
// the Job's pod and the module container runs one operation with it against
// the image's /captf/runtime. Everything it does lives in internal/runner.
// Build it static: CGO_ENABLED=0 go build ./cmd/runner.
package main

import (
	"os"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Stdout, os.Stderr))
}
