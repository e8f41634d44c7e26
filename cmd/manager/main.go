package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
)

func main() {
	if err := setup.Command().ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		os.Exit(1)
	}
}
