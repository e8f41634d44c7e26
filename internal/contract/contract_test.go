package contract

import (
	"slices"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestReasonsEqualTheAPIConstants(t *testing.T) {
	for got, want := range map[string]string{
		ReasonOutputsValid:                  v1alpha1.OutputsValidReason,
		ReasonInstancesTruncated:            v1alpha1.InstancesTruncatedReason,
		ReasonFailureDomainMismatch:         v1alpha1.FailureDomainMismatchReason,
		ReasonOutputsInvalid:                v1alpha1.OutputsInvalidReason,
		ReasonOutputsMissing:                v1alpha1.OutputsMissingReason,
		ReasonProviderIDChanged:             v1alpha1.ProviderIDChangedReason,
		ReasonOutputsPending:                v1alpha1.OutputsPendingReason,
		ReasonReplicasManagedByModule:       v1alpha1.ReplicasManagedByModuleReason,
		ReasonAutoscalingDisabled:           v1alpha1.AutoscalingDisabledReason,
		ReasonAutoscalingAnnotationsInvalid: v1alpha1.AutoscalingAnnotationsInvalidReason,
		ReasonVariablesInvalid:              v1alpha1.VariablesInvalidReason,
		ReasonVariablesSourceNotFound:       v1alpha1.VariablesSourceNotFoundReason,
		ReasonWaitingForClusterExports:      v1alpha1.WaitingForClusterExportsReason,
		ReasonInputsTooLarge:                v1alpha1.InputsTooLargeReason,
	} {
		if got != want {
			t.Errorf("reason %q differs from api/v1alpha1 %q", got, want)
		}
	}
}

func TestRoleInputs_MatchTheSkeletons(t *testing.T) {
	common := []string{InputContract, InputCluster, InputObject, InputClusterOutputs, InputTags}
	for _, tc := range []struct {
		role     Role
		names    []string
		nullable []string
	}{
		{RoleCluster, []string{InputContract, InputCluster, InputObject, InputTags, InputControlPlaneEndpoint, InputKubernetesVersion, InputControlPlaneInitialized, InputClusterNetwork},
			[]string{InputControlPlaneEndpoint, InputKubernetesVersion, InputClusterNetwork}},
		{RoleMachine, append(slices.Clone(common), InputMachineName, InputBootstrapData, InputBootstrapFormat, InputFailureDomain, InputKubernetesVersion, InputControlPlane),
			[]string{InputClusterOutputs, InputFailureDomain, InputKubernetesVersion}},
		{RoleMachinePool, append(slices.Clone(common), InputMachinePoolName, InputReplicas, InputBootstrapData, InputBootstrapFormat, InputNodeLabels, InputFailureDomains, InputClusterFailureDomains, InputKubernetesVersion, InputAutoscaling),
			[]string{InputClusterOutputs, InputKubernetesVersion}},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			if got := tc.role.InputNames(); !slices.Equal(got, tc.names) {
				t.Errorf("inputs = %v, want %v", got, tc.names)
			}
			var nullable []string
			for _, in := range tc.role.Inputs() {
				if in.Nullable {
					nullable = append(nullable, in.Name)
				}
				if !in.Required || in.Type == "" {
					t.Errorf("%s: every v1alpha1 input is required and typed", in.Name)
				}
				if in.Sensitive != (in.Name == InputBootstrapData) {
					t.Errorf("%s: only bootstrap_data is sensitive", in.Name)
				}
			}
			if !slices.Equal(nullable, tc.nullable) {
				t.Errorf("nullable = %v, want %v", nullable, tc.nullable)
			}
		})
	}
	if RoleCluster.IsInput(InputClusterOutputs) {
		t.Error("the cluster role has no captf_cluster_outputs input at all")
	}
}

func TestRoleOutputs(t *testing.T) {
	for role, want := range map[Role][]string{
		RoleCluster:     {OutputControlPlaneEndpoint, OutputFailureDomains, OutputExports, OutputHealth},
		RoleMachine:     {OutputProviderID, OutputAddresses, OutputFailureDomain, OutputInterruptible, OutputHealth},
		RoleMachinePool: {OutputProviderID, OutputProviderIDList, OutputReplicas, OutputInstances, OutputHealth},
	} {
		if got := role.OutputNames(); !slices.Equal(got, want) {
			t.Errorf("%s outputs = %v, want %v", role, got, want)
		}
	}
}

func TestCheckVariableName(t *testing.T) {
	for _, tc := range []struct {
		name string
		role Role
		ok   bool
	}{
		{"instance_type", RoleMachine, true},
		{"_private-name2", RoleMachine, true},
		{"2fast", RoleMachine, false},
		{"has.dot", RoleMachine, false},
		{"", RoleMachine, false},
		{"captf_extra", RoleCluster, false},
		{"machine_name", RoleMachine, false},
		{"machine_name", RoleCluster, true},
		{"control_plane_initialized", RoleCluster, false},
		{"replicas", RoleMachinePool, false},
		{"replicas", RoleMachine, true},
		{"depends_on", RoleCluster, false},
		{"locals", RoleMachinePool, false},
		{"source", RoleMachine, false},
	} {
		err := CheckVariableName(tc.role, tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckVariableName(%s, %q) = %v, want ok=%v", tc.role, tc.name, err, tc.ok)
		}
	}
}

func TestParseRoleAndKinds(t *testing.T) {
	for _, r := range Roles() {
		got, err := ParseRole(string(r))
		if err != nil || got != r || r.Kind() == "" {
			t.Errorf("ParseRole(%s) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseRole("worker"); err == nil {
		t.Error("unknown role accepted")
	}
}
