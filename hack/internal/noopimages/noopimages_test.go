package noopimages

import (
	"slices"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// TestSelectRoles: make noop-images NOOP="cluster machine" (Quick Start,
// "Build the no-op module images") builds only the roles named; empty is
// all three; an unknown name is an error naming it.
func TestSelectRoles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []contract.Role
		err  bool
	}{
		{"", contract.Roles(), false},
		{"cluster machine", []contract.Role{contract.RoleCluster, contract.RoleMachine}, false},
		{"machinepool,cluster, machinepool", []contract.Role{contract.RoleMachinePool, contract.RoleCluster}, false},
		{"cluster bogus", nil, true},
	} {
		got, err := SelectRoles(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("SelectRoles(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}
