package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

func newStatusCommand(o *options) *cobra.Command {
	var (
		all   bool
		watch bool
		out   = newOutputFlags()
		s     = Settings{DriftDefault: decide.DefaultDriftInterval}
	)
	cmd := &cobra.Command{
		Use:   "status [KIND/NAME]",
		Short: "Show Ready, the last run, the next check and what each object waits on",
		Long: `Show one row per TerraformCluster, TerraformMachine and TerraformMachinePool:
Ready and its reason, the last run (operation, outcome, age), when the next
drift check is due, and what the object waits on (a running Job, a plan
approval, a lost state, a dependency).

Naming a TerraformCluster shows its tree instead: the cluster, its machines
and pools, and each one's Jobs.

-o takes every output kubectl get has (json, yaml, name, jsonpath,
go-template, custom-columns and their -file forms); each row is printed as
an object with the apiVersion, kind, name and namespace of the object it
shows, beside the row's fields (ready, reason, lastRun, nextCheck,
waitingOn, ...). --watch prints the rows, then a row each time an object's
status changes, until interrupted.`,
		Example: `  kubectl captf status -A
  kubectl captf status -n team-a -o wide
  kubectl captf status terraformcluster/demo -n team-a
  kubectl captf status -A -o custom-columns=NAME:.metadata.name,READY:.ready,WAITING:.waitingOn
  kubectl captf status -n team-a -o jsonpath='{.items[*].metadata.name}'
  kubectl captf status -n team-a --watch`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := out.toOutput()
			if err != nil {
				return err
			}
			k, err := o.kube()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var one *target
			if len(args) == 1 {
				if all {
					return fmt.Errorf("name an object or use -A, not both")
				}
				t, err := parseTarget(args[0])
				if err != nil {
					return err
				}
				one = &t
			}
			ns := k.namespace
			if all {
				ns = ""
			}
			if watch {
				return watchStatus(ctx, o, k, watchScope{namespace: ns, one: one, all: all}, op, s)
			}
			if one != nil {
				return statusOne(ctx, o, k, *one, op, s)
			}
			rows, err := collectRows(ctx, k, ns, s)
			if err != nil {
				return err
			}
			if len(rows) == 0 && !op.structured() {
				where := "in namespace " + ns
				if ns == "" {
					where = "in any namespace"
				}
				fmt.Fprintf(o.streams.ErrOut, "No TerraformClusters, TerraformMachines or TerraformMachinePools %s.\n", where)
				return nil
			}
			return printRows(o.streams.Out, rows, op, o.now(), all)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the objects of every namespace.")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After the rows, print a row each time an object's status changes, until interrupted.")
	out.addFlags(cmd)
	cmd.Flags().DurationVar(&s.DriftDefault, "drift-default-interval", s.DriftDefault, "The manager's --drift-default-interval, for estimating the next check of objects that set no interval.")
	return cmd
}

// printRows prints rows as the output asks: the table, or a List of the
// rows through the printer.
func printRows(out io.Writer, rows []Row, op output, now time.Time, all bool) error {
	if op.structured() {
		return printRowsWith(out, op.printer, rows, true)
	}
	return printTable(out, rows, now, all, op.wide)
}

// printStructured prints v as indented JSON or as YAML.
func printStructured(out io.Writer, v any, output string) error {
	if output == "json" {
		b, err := jsonIndent(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// collectRows lists the three kinds and their Jobs in ns ("" for all).
func collectRows(ctx context.Context, k *kube, ns string, s Settings) ([]Row, error) {
	var objs []object
	for _, kd := range kinds {
		l, err := k.list(ctx, kd, ns, "")
		if err != nil {
			return nil, err
		}
		objs = append(objs, l...)
	}
	js, err := k.jobs(ctx, ns)
	if err != nil {
		return nil, err
	}
	return rowsFor(objs, js, s), nil
}

// rowsFor builds the sorted rows of objs; a machine's or pool's owning
// TerraformCluster (same namespace and Cluster) gives its drift defaults.
func rowsFor(objs []object, js []batchv1.Job, s Settings) []Row {
	sortObjects(objs)
	owners := map[string]*infrav1.TerraformCluster{}
	for _, ob := range objs {
		if tc, ok := ob.w.(*infrav1.TerraformCluster); ok && clusterName(tc) != "" {
			owners[tc.Namespace+"/"+clusterName(tc)] = tc
		}
	}
	rows := make([]Row, 0, len(objs))
	for _, ob := range objs {
		rows = append(rows, rowFor(ob, owners[ob.w.GetNamespace()+"/"+clusterName(ob.w)], js, s))
	}
	return rows
}

// statusOne shows one object: a TerraformCluster as its tree, a machine or
// pool as one row.
func statusOne(ctx context.Context, o *options, k *kube, t target, op output, s Settings) error {
	ob, err := k.get(ctx, t)
	if err != nil {
		return err
	}
	js, err := k.jobs(ctx, k.namespace)
	if err != nil {
		return err
	}
	tc, isCluster := ob.w.(*infrav1.TerraformCluster)
	if !isCluster {
		rows := rowsFor([]object{ob}, js, s)
		if op.structured() {
			return printRowsWith(o.streams.Out, op.printer, rows, false)
		}
		return printTable(o.streams.Out, rows, o.now(), false, op.wide)
	}
	var members []object
	if name := clusterName(tc); name != "" {
		for _, kd := range kindsOf(infrav1.KindsWith(func(c infrav1.Capabilities) bool { return c.ClusterMember })) {
			l, err := k.list(ctx, kd, k.namespace, clusterNameLabel+"="+name)
			if err != nil {
				return err
			}
			members = append(members, l...)
		}
	}
	root := treeFor(ob, members, js, s)
	if op.structured() {
		return printRowsWith(o.streams.Out, op.printer, root.flatten(), true)
	}
	return printTree(o.streams.Out, root, o.now())
}

// treeFor builds a cluster's tree: the TerraformCluster and its Jobs, then
// its machines and pools (sorted) with theirs.
func treeFor(cluster object, members []object, js []batchv1.Job, s Settings) Node {
	tc := cluster.w.(*infrav1.TerraformCluster)
	root := Node{Row: rowFor(cluster, nil, js, s), Jobs: jobRows(cluster, js)}
	sortObjects(members)
	for _, m := range members {
		root.Children = append(root.Children, Node{Row: rowFor(m, tc, js, s), Jobs: jobRows(m, js)})
	}
	return root
}
