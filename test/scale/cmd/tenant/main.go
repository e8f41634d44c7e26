// Command tenant measures what a hostile tenant costs the manager's memory
// (Security Model): the same fleet brought up twice on one manager binary,
// once alone and once beside a tenant that labels 1 MiB Secrets
// captf.io/managed=true and runs a module whose state is a gzip bomb. It
// prints the manager's peak and steady RSS of both runs and fails when the
// hostile run's exceed the quiet run's by more than the allowed share.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/scale"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func main() {
	n := flag.Int("n", 500, "fleet size (TerraformMachines)")
	secrets := flag.Int("secrets", 500, "1 MiB Secrets the hostile tenant labels captf.io/managed=true")
	steady := flag.Duration("steady", 2*time.Minute, "steady window after all Ready")
	managerBin := flag.String("manager-bin", "", "a manager binary built beforehand (default: built from cmd/manager)")
	allowed := flag.Float64("allowed", 0.10, "largest share by which the hostile run's RSS may exceed the quiet run's")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *n, *secrets, *steady, *allowed, *managerBin); err != nil {
		fmt.Fprintf(os.Stderr, "tenant: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n, secrets int, steady time.Duration, allowed float64, bin string) error {
	dir, err := os.MkdirTemp("", "captf-tenant-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "manager")
		if err := tools.Build(ctx, "./cmd/manager", bin); err != nil {
			return err
		}
	}
	var results [2]scale.Result
	for i, hostile := range []bool{false, true} {
		name := map[bool]string{false: "quiet", true: "hostile"}[hostile]
		cfg := scale.Config{N: n, JobDelay: 2 * time.Second, Settle: 30 * time.Second, Steady: steady, ManagerBinary: bin,
			Logf: func(format string, args ...any) { fmt.Printf("%s: %s\n", name, fmt.Sprintf(format, args...)) }}
		if hostile {
			cfg.HostileSecrets, cfg.Bomb = secrets, true
		}
		res, err := scale.Run(ctx, cfg)
		if err != nil {
			return fmt.Errorf("%s run: %w", name, err)
		}
		results[i] = *res
	}
	q, h := results[0], results[1]
	fmt.Printf("\n| run | all Ready (s) | peak RSS (MiB) | steady RSS (MiB) | steady heap (MiB) |\n| --- | ---: | ---: | ---: | ---: |\n")
	fmt.Printf("| quiet, %d machines | %.0f | %.0f | %.0f | %.0f |\n", n, q.AllReadySeconds, q.PeakRSSMiB, q.SteadyRSSMiB, q.SteadyHeapMiB)
	fmt.Printf("| beside a tenant with %d Secrets of 1 MiB and a gzip-bomb state | %.0f | %.0f | %.0f | %.0f |\n", secrets, h.AllReadySeconds, h.PeakRSSMiB, h.SteadyRSSMiB, h.SteadyHeapMiB)
	peak, stdy := h.PeakRSSMiB/q.PeakRSSMiB-1, h.SteadyRSSMiB/q.SteadyRSSMiB-1
	fmt.Printf("\npeak RSS %+.1f %%, steady RSS %+.1f %% (allowed %+.0f %%)\n", 100*peak, 100*stdy, 100*allowed)
	if peak > allowed || stdy > allowed {
		return fmt.Errorf("the hostile tenant raised the manager's RSS past %.0f %%", 100*allowed)
	}
	return nil
}
