//go:build chaos

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// matrixParallel is how many points of the matrix run at once.
const matrixParallel = 4

// The matrix's namespaces: one for the recording, one per point from
// matrixFirst on.
const matrixRecord, matrixFirst = 63, 64

// TestFaultMatrix is the whole kill matrix (make chaos): a first bring-up of
// the reference shape (three control-plane and three worker machines)
// records its manager's write sites; then, for every site, a bring-up whose
// manager is killed right after the site's first write and a fresh manager
// finishes. Every point must converge with the eight Jobs the book
// predicts, each created once and booked once, nothing left behind.
// CAPTF_FAULT_RECORD_ONLY=1 stops after the recording.
func TestFaultMatrix(t *testing.T) {
	const cps, workers = 3, 3
	t0 := time.Now()
	b := newFaultBringUp(t, matrixRecord, cps, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	f := b.run(ctx, nil)
	b.apply(ctx)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
	b.stop()
	writes := f.Writes()
	t.Logf("recorded bring-up: %d writes, %v", len(writes), time.Since(t0).Round(time.Second))
	for _, w := range writes {
		t.Logf("  %s", w)
	}
	sites := siteCounts(writes)
	t.Logf("%d write sites:\n  %s", len(sites), strings.Join(sites, "\n  "))
	if os.Getenv("CAPTF_FAULT_RECORD_ONLY") != "" || t.Failed() {
		return
	}
	names, _ := framework.Sites(writes)
	if len(names) > faultNamespaces-matrixFirst {
		t.Fatalf("%d sites, more than the %d fault namespaces left for the matrix", len(names), faultNamespaces-matrixFirst)
	}
	var mu sync.Mutex
	var results []string
	sem := make(chan struct{}, matrixParallel)
	t.Run("points", func(t *testing.T) {
		for i, site := range names {
			t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				t1 := time.Now()
				runFaultPoint(t, matrixFirst+i, cps, workers, faultPoint{site: site, at: 1})
				verdict := "converged"
				if t.Failed() {
					verdict = "FAILED"
				}
				mu.Lock()
				results = append(results, fmt.Sprintf("| %s | 1 | %s | %v |", site, verdict, time.Since(t1).Round(time.Second)))
				mu.Unlock()
			})
		}
	})
	t.Logf("matrix: %d points in %v\n| site | after write | result | time |\n| --- | --- | --- | --- |\n%s",
		len(names), time.Since(t0).Round(time.Second), strings.Join(results, "\n"))
}

// runFaultPoint brings up a cluster in namespace fault-<i> under a manager
// killed at p, then under a fresh manager, and checks the end state. It
// returns the killed manager's writes.
func runFaultPoint(t *testing.T, i, cps, workers int, p faultPoint) []framework.Write {
	b := newFaultBringUp(t, i, cps, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	f := b.run(ctx, func(f *framework.Faults, cancel context.CancelFunc) {
		f.KillSite, f.KillAt, f.Cancel = p.site, p.at, cancel
	})
	defer b.stop()
	b.apply(ctx)
	killed, ok := framework.WaitFor(ctx, 10*time.Minute, func() (bool, string) {
		if k := f.Killed(); k != nil {
			return true, k.String()
		}
		if ok, _ := b.converged(ctx); ok {
			return true, ""
		}
		return false, ""
	})
	if !ok || f.Killed() == nil {
		b.w.dump(ctx)
		t.Fatalf("the manager was never killed after write %d of %q; the sites it wrote: %v", p.at, p.site, siteCounts(f.Writes()))
	}
	b.stop()
	t.Logf("killed after %s; a fresh manager takes over", killed)
	b.run(ctx, nil)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
	return f.Writes()
}
