// Command kubectl-captf is CAPTF's kubectl plugin: with it on PATH,
// `kubectl captf status -A` and the other commands of internal/cli work as
// a kubectl subcommand; it also runs on its own.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/captf-io/cluster-api-provider-terraform/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
