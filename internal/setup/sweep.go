package setup

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
)

// sweeper runs the orphan sweep (reference-facts §10.3) at start and then
// every sync period, while this manager leads.
type sweeper struct {
	live       client.Reader
	w          client.Writer
	namespaces []string
	every      time.Duration
	log        logr.Logger
}

func newSweeper(mgr ctrl.Manager, o Options) *sweeper {
	s := &sweeper{
		live:  mgr.GetAPIReader(),
		w:     mgr.GetClient(),
		every: o.SyncPeriod,
		log:   mgr.GetLogger().WithName("sweep"),
	}
	s.namespaces = o.Namespaces()
	return s
}

// NeedLeaderElection: only the leader sweeps.
func (s *sweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends. A failed sweep is logged and tried again at
// the next interval.
func (s *sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		res, err := identity.Sweep(ctrl.LoggerInto(ctx, s.log), s.live, s.w, s.namespaces)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error(err, "Sweeping runner objects from namespaces with no Terraform objects failed")
		case len(res.Namespaces) > 0:
			s.log.Info("Swept runner objects from namespaces with no Terraform objects",
				"namespaces", res.Namespaces, "serviceAccounts", res.ServiceAccounts,
				"roleBindings", res.RoleBindings, "leases", res.Leases)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
