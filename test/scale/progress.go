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
	toolscache "k8s.io/client-go/tools/cache"
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
// machines run their Jobs while later ones are still being created, or
// one at a time at a steady pace.
type creator struct {
	c       client.Client
	layout  layout
	workers int
	batch   int
	// pace, when set, creates one machine every pace instead of batches,
	// the first once after is closed.
	pace    time.Duration
	after   <-chan struct{}
	created atomic.Int64
}

// run creates machines [0, n): paced, one every cr.pace; else in batches of
// cr.batch with cr.workers at once, pausing pause between batches.
func (cr *creator) run(ctx context.Context, n int, pause time.Duration) error {
	if cr.pace > 0 {
		return cr.paced(ctx, n)
	}
	for from := 0; from < n; from += cr.batch {
		to := min(from+cr.batch, n)
		if err := createMachines(ctx, cr.c, cr.layout, from, to, cr.workers, &cr.created); err != nil {
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

// paced creates machines [0, n) one at a time once cr.after is closed, each
// cr.pace after the one before started (a create slower than the pace
// delays the next).
func (cr *creator) paced(ctx context.Context, n int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-cr.after:
	}
	t := time.NewTicker(cr.pace)
	defer t.Stop()
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
		s := cr.layout.machineShard(i)
		if err := createMachine(ctx, cr.c, MachineName(i), cr.layout.labels(s)); err != nil {
			return err
		}
		cr.created.Add(1)
	}
	return nil
}

// createMachines creates machines [from, to): a bootstrap Secret, a Machine
// pointing at it and its TerraformMachine, each in its shard's Cluster,
// with workers creators at once. Each create is retried while the API
// server is too busy to answer.
func createMachines(ctx context.Context, c client.Client, l layout, from, to, workers int, created *atomic.Int64) error {
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
				if err := createMachine(ctx, c, MachineName(i), l.labels(l.machineShard(i))); err != nil {
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

// provisioner stands in for Cluster API's Cluster controller: it marks each
// Cluster's infrastructure provisioned as soon as its TerraformCluster
// reports provisioned, while the machines are still being created. It
// calls marked with each Cluster's name once marked, and sends nil once
// all are (or the error that ended it).
func provisioner(ctx context.Context, c client.Client, view client.Reader, clusters []string, marked func(name string)) <-chan error {
	done := make(chan error, 1)
	go func() {
		left := map[string]bool{}
		for _, n := range clusters {
			left[n] = true
		}
		done <- wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			for _, name := range clusters {
				if !left[name] {
					continue
				}
				tc := &infrav1.TerraformCluster{}
				if err := view.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, tc); err != nil {
					continue
				}
				if i := tc.Status.Initialization; i == nil || i.Provisioned == nil || !*i.Provisioned {
					continue
				}
				if err := withRetry(ctx, func() error { return markInfrastructureProvisioned(ctx, c, name) }); err != nil {
					return false, fmt.Errorf("failed to mark Cluster %s provisioned: %w", name, err)
				}
				delete(left, name)
				marked(name)
			}
			return len(left) == 0, nil
		})
	}()
	return done
}

// fleetView is a watch-fed cache of the fleet's TerraformMachines and
// TerraformClusters: counting Ready machines reads it instead of listing N
// objects from a busy API server every few seconds. It tells reactions
// each time it sees a fleet machine Ready or removed.
func fleetView(ctx context.Context, cfg *rest.Config, c client.Client, reactions *reactionLog) (cache.Cache, error) {
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
	inf, err := v.GetInformer(ctx, &infrav1.TerraformMachine{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seeMachine(reactions, obj) },
		UpdateFunc: func(_, obj any) { seeMachine(reactions, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if tm, ok := obj.(*infrav1.TerraformMachine); ok && tm.Name != BombMachine {
				reactions.stepSeen(tm.Namespace+"/"+tm.Name, time.Now())
			}
		},
	}); err != nil {
		return nil, err
	}
	go func() { _ = v.Start(ctx) }()
	if !v.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's fleet watch did not sync")
	}
	return v, nil
}

// seeMachine tells reactions when the view sees a fleet machine with its
// Ready condition True.
func seeMachine(reactions *reactionLog, obj any) {
	tm, ok := obj.(*infrav1.TerraformMachine)
	if !ok || tm.Name == BombMachine || !isReady(tm) {
		return
	}
	reactions.stepSeen(tm.Namespace+"/"+tm.Name, time.Now())
}

func isReady(tm *infrav1.TerraformMachine) bool {
	for _, cond := range tm.Status.Conditions {
		if cond.Type == infrav1.ReadyCondition && cond.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// readiness counts the TerraformMachines whose Ready condition is True, and
// reports how many of the TerraformClusters named are provisioned.
func readiness(ctx context.Context, view client.Reader, clusters []string) (ready, total, clustersProvisioned int, err error) {
	for _, name := range clusters {
		tc := &infrav1.TerraformCluster{}
		if err := view.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, tc); err == nil {
			if i := tc.Status.Initialization; i != nil && i.Provisioned != nil && *i.Provisioned {
				clustersProvisioned++
			}
		} else if !apierrors.IsNotFound(err) {
			return 0, 0, 0, err
		}
	}
	var list infrav1.TerraformMachineList
	if err := view.List(ctx, &list, client.InNamespace(Namespace)); err != nil {
		return 0, 0, clustersProvisioned, err
	}
	for i := range list.Items {
		if list.Items[i].Name == BombMachine {
			continue
		}
		total++
		if isReady(&list.Items[i]) {
			ready++
		}
	}
	return ready, total, clustersProvisioned, nil
}
