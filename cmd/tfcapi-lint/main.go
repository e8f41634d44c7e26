// Command tfcapi-lint checks a CAPTF module, or the OCI image built from it,
// against the module contract and the image contract (book: tfcapi-lint).
package main

import (
	"os"

	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
)

func main() {
	os.Exit(lint.Main(os.Args[1:], os.Stdout, os.Stderr))
}
