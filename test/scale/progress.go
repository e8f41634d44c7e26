package scale

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// transient reports whether an API error is worth retrying: a busy API
// server times requests out, throttles them or answers 5xx.
func transient(err error) bool {
	if err == nil {
		return false
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		errors.Is(err, context.DeadlineExceeded) || isConnectionError(err)
}

// isConnectionError: a reset, refused or cut connection to a saturated API
// server.
func isConnectionError(err error) bool {
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
}

// backoffOnLoad retries fn while it fails with a transient error, for up to
// about two minutes.
var backoffOnLoad = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 10, Cap: 20 * time.Second}

// withRetry runs fn until it succeeds, fails with an error that is not
// transient, runs out of backoff steps or ctx ends (the wait between tries
// too), returning fn's last error.
func withRetry(ctx context.Context, fn func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoffOnLoad, func(context.Context) (bool, error) {
		last = fn()
		switch {
		case last == nil:
			return true, nil
		case transient(last):
			return false, nil
		}
		return false, last
	})
	if wait.Interrupted(err) && last != nil {
		return last
	}
	return err
}

// creator creates the fleet's machines in batches, so that the first
// machines run their Jobs while later ones are still being created.
type creator struct {
	c       client.Client
	workers int
	batch   int
	created atomic.Int64
}

// run creates machines [0, n) in batches of c.batch with c.workers at once,
// pausing pause between batches.
func (cr *creator) run(ctx context.Context, n int, pause time.Duration) error {
	for from := 0; from < n; from += cr.batch {
		to := min(from+cr.batch, n)
		if err := createMachines(ctx, cr.c, from, to, cr.workers, &cr.created); err != nil {
			return err
		}
		if to < n && pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// createMachines creates machines [from, to): a bootstrap Secret, a Machine
// pointing at it and its TerraformMachine, with workers creators at once.
// Each create is retried while the API server is too busy to answer.
func createMachines(ctx context.Context, c client.Client, from, to, workers int, created *atomic.Int64) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := createMachine(ctx, c, MachineName(i)); err != nil {
					errs <- err
					return
				}
				created.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// provisioner stands in for Cluster API's Cluster controller: it marks the
// Cluster's infrastructure provisioned as soon as the TerraformCluster
// reports provisioned, while the machines are still being created.
func provisioner(ctx context.Context, c client.Client, view client.Reader) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			tc := &infrav1.TerraformCluster{}
			if err := view.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ClusterName}, tc); err != nil {
				return false, nil
			}
			if i := tc.Status.Initialization; i == nil || i.Provisioned == nil || !*i.Provisioned {
				return false, nil
			}
			if err := withRetry(ctx, func() error { return markInfrastructureProvisioned(ctx, c) }); err != nil {
				return false, fmt.Errorf("failed to mark Cluster %s provisioned: %w", ClusterName, err)
			}
			return true, nil
		})
	}()
	return done
}

// fleetView is a watch-fed cache of the fleet's TerraformMachines and
// TerraformCluster: counting Ready machines reads it instead of listing N
// objects from a busy API server every few seconds.
func fleetView(ctx context.Context, cfg *rest.Config, c client.Client) (cache.Cache, error) {
	v, err := cache.New(cfg, cache.Options{
		Scheme:            c.Scheme(),
		DefaultNamespaces: map[string]cache.Config{Namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, err
	}
	for _, o := range []client.Object{&infrav1.TerraformMachine{}, &infrav1.TerraformCluster{}} {
		if _, err := v.GetInformer(ctx, o); err != nil {
			return nil, err
		}
	}
	go func() { _ = v.Start(ctx) }()
	if !v.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's fleet watch did not sync")
	}
	return v, nil
}

// readiness counts the TerraformMachines whose Ready condition is True, and
// reports whether the TerraformCluster is provisioned.
func readiness(ctx context.Context, view client.Reader) (ready, total int, clusterProvisioned bool, err error) {
	tc := &infrav1.TerraformCluster{}
	if err := view.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ClusterName}, tc); err == nil {
		if i := tc.Status.Initialization; i != nil && i.Provisioned != nil && *i.Provisioned {
			clusterProvisioned = true
		}
	} else if !apierrors.IsNotFound(err) {
		return 0, 0, false, err
	}
	var list infrav1.TerraformMachineList
	if err := view.List(ctx, &list, client.InNamespace(Namespace)); err != nil {
		return 0, 0, clusterProvisioned, err
	}
	for i := range list.Items {
		if list.Items[i].Name == BombMachine {
			continue
		}
		total++
		for _, cond := range list.Items[i].Status.Conditions {
			if cond.Type == infrav1.ReadyCondition && cond.Status == metav1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, total, clusterProvisioned, nil
}
