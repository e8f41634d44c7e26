package setup

// The manager ClusterRole captf-manager-role. It is never aggregated. It
// grants what the manager's code sends and nothing more: its own kinds are
// read and patched, never created, updated or deleted (users and Cluster
// API do that), but for TerraformPlan, the record of a plan under review,
// which the manager alone creates, patches (phase) and prunes; status is read with the object and written by patch;
// TerraformClusterTemplate and TerraformMachinePoolTemplate are validated
// by the webhooks from the admission request alone and never read. The
// end-to-end test TestMachinePoolAndDeletion/ManagerRBACIsWhatItUses
// compares these rules with what the manager asked the API server
// (test/e2e/rbac_test.go keeps the reasons for the grants a bring-up does
// not use).
//
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=terraformclusters;terraformmachines;terraformmachinepools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=terraformclusteridentities;terraformmachinetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=terraformclusters/status;terraformmachines/status;terraformmachinepools/status;terraformclusteridentities/status;terraformmachinetemplates/status,verbs=patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=terraformclusters/finalizers;terraformmachines/finalizers;terraformmachinepools/finalizers,verbs=update
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=terraformplans,verbs=list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machinepools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=captf-runner
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
