// Package cli is kubectl-captf, the operator's command line for CAPTF: the
// status of every TerraformCluster, TerraformMachine and TerraformMachinePool
// with its last run and what it waits on, the plan awaiting approval, and
// the day-2 annotations of the book (approve a plan, restore a state backup,
// abandon a deleting object whose state is lost) written with the exact key
// and the value the controller published, so none has to be spelled by hand.
//
// It is built on k8s.io/cli-runtime, so --kubeconfig, --context, -n and the
// other connection flags behave as in kubectl, and it reads and patches
// objects with the caller's own credentials: it needs no more than a Role
// that reads and patches Terraform* objects and reads Jobs and pod logs.
// It never reads a Secret's data.
package cli
