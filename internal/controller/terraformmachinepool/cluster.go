package terraformmachinepool

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// clusterFailureDomains reads the pool's cluster_failure_domains input: the
// names of the failure_domains output in the cluster's own state, at render
// time, never TerraformCluster.status.failureDomains (Contract -
// MachinePool Role, "cluster_failure_domains": status is not moved by
// clusterctl move and is empty until the target's first cluster
// reconcile). An externally managed TerraformCluster has no state: [] (as
// its captf_cluster_outputs is {}). A state that cannot be read, or a
// failure_domains output that is invalid, keeps the pool waiting like
// unreadable exports do.
func clusterFailureDomains(ctx context.Context, c client.Reader, tc *infrav1.TerraformCluster) ([]string, *lifecycle.InputsOutcome) {
	if annotations.IsExternallyManaged(tc) {
		return []string{}, nil
	}
	suffix, err := state.Suffix(tc.Namespace, infrav1.KindTerraformCluster, tc.Name)
	if err != nil {
		w := lifecycle.Waiting(infrav1.WaitingForClusterExportsReason, err.Error())
		return nil, &w
	}
	st, err := state.Read(ctx, c, tc.Namespace, suffix, state.DefaultLimits)
	if err != nil {
		w := lifecycle.Waiting(infrav1.WaitingForClusterExportsReason, "the cluster state cannot be read: "+err.Error())
		return nil, &w
	}
	names, err := failureDomainNames(st.Outputs)
	if err != nil {
		w := lifecycle.Waiting(infrav1.WaitingForClusterExportsReason, err.Error())
		return nil, &w
	}
	return names, nil
}

// failureDomainNames returns the names of the failure_domains output of a
// cluster state's outputs, in the module's order; [] when it is null or
// absent.
func failureDomainNames(outputs state.Outputs) ([]string, error) {
	fds, problems := contract.DecodeFailureDomains(outputs[contract.OutputFailureDomains].Value)
	if len(problems) > 0 {
		parts := make([]string, 0, len(problems))
		for _, p := range problems {
			parts = append(parts, p.String())
		}
		return nil, fmt.Errorf("the cluster module's failure_domains output is invalid: %s", strings.Join(parts, "; "))
	}
	return inputs.ClusterFailureDomainNames(fds), nil
}
