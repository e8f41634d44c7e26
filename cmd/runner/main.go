package main

import (
	"os"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Stdout, os.Stderr))
}
