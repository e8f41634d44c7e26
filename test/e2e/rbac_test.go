package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// Reasons shared by several exceptions.
const (
	// The informers' first read. client-go streams it as a watch
	// (WatchListClient, on by default), so only watch shows in the log; a
	// client with it off (KUBE_FEATURE_WatchListClient=false), or an API
	// server that refuses the stream, lists instead.
	informerList = "the cache's initial list, sent as a streaming watch here; a list where watch-list is off or refused"
	// The object is cached: list already returns whatever get would, so
	// get adds no access. The manager's client answers get from the
	// cache, and the uncached reader (webhook guards, freshness checks)
	// gets one object when it must read past the cache.
	cachedGet = "held with list, which returns what get would; the uncached reader gets single objects past the cache (webhook delete guards, freshness checks)"
	// Kubernetes' OwnerReferencesPermissionEnforcement admission
	// plugin (off in a default kube-apiserver, on in OpenShift) asks
	// for update on the owner's finalizers when an owner reference sets
	// blockOwnerDeletion; it is an admission check, not a request, so no
	// audit event names it.
	blockOwnerDeletion = "OwnerReferencesPermissionEnforcement checks it when an owner reference sets blockOwnerDeletion; an admission check, never a request of its own"
)

// cachedCAPTF are the CAPTF resources the manager's cache holds.
var cachedCAPTF = []string{"terraformclusters", "terraformmachines", "terraformmachinepools", "terraformclusteridentities", "terraformmachinetemplates"}

// managerRBACExceptions are the grants of captf-manager-role that the
// shared manager may hold without having used them by the end of
// TestMachinePoolAndDeletion, each with the reason it is kept.
var managerRBACExceptions = exceptions(
	sameReason(informerList, "list", infrav1.GroupVersion.Group, cachedCAPTF...),
	sameReason(informerList, "list", clusterv1.GroupVersion.Group, "clusters", "machines", "machinepools"),
	sameReason(informerList, "list", "", "secrets"),
	sameReason(informerList, "list", infrav1.GroupVersion.Group, "terraformplans"),
	map[framework.Permission]string{{Resource: "configmaps", Verb: "list"}: informerList + " (the variables cache)"},

	// Sent in some runs and not in others, as the passes race Cluster
	// API's writes.
	sameReason(cachedGet, "get", infrav1.GroupVersion.Group, cachedCAPTF...),
	sameReason(cachedGet, "get", clusterv1.GroupVersion.Group, "clusters", "machinepools"),
	sameReason(cachedGet, "get", "", "pods"),
	sameReason(cachedGet, "get", rbacv1.GroupName, "rolebindings"),

	map[framework.Permission]string{
		{Group: infrav1.GroupVersion.Group, Resource: "terraformclusters/finalizers", Verb: "update"}:     blockOwnerDeletion + " (a runner Job owned by its TerraformCluster)",
		{Group: infrav1.GroupVersion.Group, Resource: "terraformmachines/finalizers", Verb: "update"}:     blockOwnerDeletion + " (a runner Job owned by its TerraformMachine)",
		{Group: infrav1.GroupVersion.Group, Resource: "terraformmachinepools/finalizers", Verb: "update"}: blockOwnerDeletion + " (a runner Job owned by its TerraformMachinePool)",
		{Group: batchv1.GroupName, Resource: "jobs/finalizers", Verb: "update"}:                           blockOwnerDeletion + " (a per-run Secret owned by its Job)",

		{Group: rbacv1.GroupName, Resource: "clusterroles", Name: "captf-runner", Verb: "bind"}: "the API server asks for it when the manager creates or updates a RoleBinding to captf-runner and does not itself hold all of captf-runner's rights (an operator may extend captf-runner for a module); never a request of its own",
		{Group: authenticationv1.GroupName, Resource: "tokenreviews", Verb: "create"}:           "the secure diagnostics endpoint (--diagnostics-address, HTTPS by default) authenticates each scrape with a TokenReview; the scenarios run the manager without it (DiagnosticsAddress 0)",

		{Resource: "namespaces", Verb: "get"}:                                           "an identity whose allowedNamespaces has a selector: the manager reads the object's Namespace labels (uncached); the Quick Start's identity lists no selector",
		{Resource: "configmaps", Verb: "get"}:                                           "a variablesFrom ConfigMap's values, read uncached when the inputs render; the bring-up has no ConfigMap source",
		{Resource: "serviceaccounts", Verb: "get"}:                                      "an override runner ServiceAccount (spec.jobs.serviceAccountName) that is not cached (no captf.io/managed label), read uncached; and the ServiceAccount a TerraformMachineTemplate's Jobs run as, read uncached by image inspection for its pull Secrets (the bring-up has no template)",
		{Resource: "serviceaccounts", Verb: "patch"}:                                    "labeling a captf-runner ServiceAccount the user created captf.io/managed=true; the bring-up's namespace has none",
		{Resource: "serviceaccounts", Verb: "delete"}:                                   "the orphan sweep, at the leader's start and every --sync-period (10 minutes), in a namespace left with no Terraform objects",
		{Group: rbacv1.GroupName, Resource: "rolebindings", Verb: "update"}:             "the runner RoleBinding's subjects change when an object names another runner ServiceAccount",
		{Group: rbacv1.GroupName, Resource: "rolebindings", Verb: "delete"}:             "the orphan sweep, and a managed runner RoleBinding whose roleRef differs (deleted and created again)",
		{Group: batchv1.GroupName, Resource: "jobs", Verb: "delete"}:                    "pruning finished Jobs beyond the history limits (3 of each operation by default), and a stuck Job whose per-run Secret is gone; the bring-up runs at most two Jobs of an operation per object",
		{Group: "events.k8s.io", Resource: "events", Verb: "patch"}:                     "an event series: the events.k8s.io recorder patches an event when the same reason repeats on an object within its series window instead of creating another; a bring-up whose events never repeat on one object sends none",
		{Group: infrav1.GroupVersion.Group, Resource: "terraformplans", Verb: "create"}: "the record of a plan a person must review: a plan under applyPolicy Manual, a blocked destructive plan, a changed approved plan (TestApprovalsAndRestore); a bring-up applies without review",
		{Group: infrav1.GroupVersion.Group, Resource: "terraformplans", Verb: "patch"}:  "a recorded plan's phase (Approved, Applied, Superseded, Expired) and its captf.io/plan-phase label (TestApprovalsAndRestore)",
		{Group: infrav1.GroupVersion.Group, Resource: "terraformplans", Verb: "delete"}: "pruning finished plan records beyond the newest 3 of an object; a bring-up records none",
		{Group: clusterv1.GroupVersion.Group, Resource: "machines", Verb: "patch"}:      "the remediate annotation on a Machine whose health check fails (TestMachineRemediation)",
		{Group: clusterv1.GroupVersion.Group, Resource: "machinepools", Verb: "patch"}:  "the replica count written back to a MachinePool from an autoscaled TerraformMachinePool (TestAutoscaledMachinePool)",
	},
)

// sameReason gives reason to verb on each of resources in group.
func sameReason(reason, verb, group string, resources ...string) map[framework.Permission]string {
	m := make(map[framework.Permission]string, len(resources))
	for _, r := range resources {
		m[framework.Permission{Group: group, Resource: r, Verb: verb}] = reason
	}
	return m
}

// exceptions merges parts into one table; a permission in two parts is a
// mistake in the table and panics.
func exceptions(parts ...map[framework.Permission]string) map[framework.Permission]string {
	all := map[framework.Permission]string{}
	for _, part := range parts {
		for p, why := range part {
			if _, dup := all[p]; dup {
				panic(fmt.Sprintf("managerRBACExceptions: %s is listed twice", p))
			}
			all[p] = why
		}
	}
	return all
}

// checkManagerRBAC compares captf-manager-role, as the API server has it,
// with what the shared manager asked the API server since the environment
// started (its audit log): it fails on a request the authorizer refused,
// on a grant no request used that managerRBACExceptions does not explain,
// and on an exception that no longer applies.
func checkManagerRBAC(ctx context.Context, t *testing.T) {
	var role rbacv1.ClusterRole
	if err := shared.c.Get(ctx, client.ObjectKey{Name: framework.ManagerRole}, &role); err != nil {
		t.Fatal(err)
	}
	all, err := shared.audit.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var used []framework.Request
	for _, r := range all {
		if r.User == framework.ManagerUser {
			used = append(used, r)
		}
	}
	if len(used) == 0 {
		t.Fatalf("the audit log %s holds no request of %s", shared.audit.Log, framework.ManagerUser)
	}
	t.Logf("%d requests of %s, by permission:\n%s", len(used), framework.ManagerUser, framework.Summary(used))
	// One line per refused permission: its first request and how many.
	var denied []string
	first, n := map[framework.Permission]int{}, map[framework.Permission]int{}
	for _, r := range used {
		if !r.Denied() {
			continue
		}
		p := r.Permission()
		if n[p] == 0 {
			first[p] = len(denied)
			denied = append(denied, r.String())
		}
		n[p]++
	}
	for p, i := range first {
		denied[i] += fmt.Sprintf(" (%d such requests)", n[p])
	}
	if len(denied) > 0 {
		t.Errorf("the authorizer refused the manager %d permissions its ClusterRole misses:\n%s", len(denied), strings.Join(denied, "\n"))
	}
	unused, unknown, usedAnyway := framework.Unused(role.Rules, used, managerRBACExceptions)
	for _, p := range unused {
		t.Errorf("%s grants %q, which the manager never used and no exception explains: remove it from the +kubebuilder:rbac markers (internal/setup/rbac.go) or add the reason to managerRBACExceptions", framework.ManagerRole, p)
	}
	for _, p := range unknown {
		t.Errorf("managerRBACExceptions explains %q, which %s does not grant: remove the exception", p, framework.ManagerRole)
	}
	// Scenarios running beside this one exercise some excepted paths;
	// that is no failure, only worth seeing.
	for _, p := range usedAnyway {
		t.Logf("excepted but used in this run: %s", p)
	}
}
