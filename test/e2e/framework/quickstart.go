package framework

import (
	"context"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// QuickStart is the book's Quick Start: an identity allowed in team-a, then
// the default flavor with one control-plane machine and no workers on the
// no-op images.
type QuickStart struct {
	Root      string
	Client    client.Client
	Images    Images
	Namespace string
	Cluster   string
	// Identity names the TerraformClusterIdentity and its Secret (default
	// aws-prod, as in the book).
	Identity string
	// Labels, when set, go on every object Apply creates, and on the
	// objects Cluster API clones from the templates (the control plane's
	// and the machine templates' metadata): a --watch-filter shard's
	// label, say.
	Labels map[string]string
}

// label puts q.Labels on o and on the metadata its clones get.
func (q QuickStart) label(o *unstructured.Unstructured) error {
	if len(q.Labels) == 0 {
		return nil
	}
	paths := [][]string{{"metadata", "labels"}}
	switch o.GetKind() {
	case "KubeadmControlPlane":
		paths = append(paths, []string{"spec", "machineTemplate", "metadata", "labels"})
	case "TerraformMachineTemplate", "MachineDeployment", "KubeadmConfigTemplate":
		paths = append(paths, []string{"spec", "template", "metadata", "labels"})
	}
	for _, p := range paths {
		l, _, err := unstructured.NestedStringMap(o.Object, p...)
		if err != nil {
			return err
		}
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, q.Labels)
		if err := unstructured.SetNestedStringMap(o.Object, l, p...); err != nil {
			return err
		}
	}
	return nil
}

func (q QuickStart) identity() string {
	if q.Identity == "" {
		return "aws-prod"
	}
	return q.Identity
}

// Apply creates the namespaces, the identity and the cluster.
func (q QuickStart) Apply(ctx context.Context) error {
	for _, ns := range []string{q.Namespace, "captf-system"} {
		if err := Apply(ctx, q.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	identity, err := Template(q.Root, "identity.yaml", map[string]string{
		"TERRAFORM_IDENTITY_NAME": q.identity(), "NAMESPACE": q.Namespace,
	})
	if err != nil {
		return err
	}
	cluster, err := Template(q.Root, "cluster-template.yaml", map[string]string{
		"CLUSTER_NAME": q.Cluster, "NAMESPACE": q.Namespace, "KUBERNETES_VERSION": "v1.36.3",
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "0",
		"TERRAFORM_CLUSTER_IMAGE": q.Images.Cluster, "TERRAFORM_MACHINE_IMAGE": q.Images.Machine,
		"TERRAFORM_IDENTITY_NAME": q.identity(),
	})
	if err != nil {
		return err
	}
	for _, o := range append(identity, cluster...) {
		if err := q.label(o); err != nil {
			return err
		}
		if err := Apply(ctx, q.Client, o); err != nil {
			return err
		}
	}
	return nil
}

// Row is one object of the Quick Start and its Ready condition.
type Row struct {
	Kind, Name, Ready, Reason, Phase string
	Jobs                             []string
}

// Rows reads the Quick Start's objects: the TerraformCluster and
// TerraformMachines with their Ready condition and the Jobs each ran, and
// the Cluster and Machines with their phase.
func (q QuickStart) Rows(ctx context.Context) ([]Row, error) {
	in := client.InNamespace(q.Namespace)
	var jobs batchv1.JobList
	if err := q.Client.List(ctx, &jobs, in); err != nil {
		return nil, err
	}
	jobsOf := map[string][]string{}
	for _, j := range jobs.Items {
		key := j.Labels[infrav1.OwnerKindLabel] + "/" + j.Labels[infrav1.OwnerNameLabel]
		state := "running"
		switch {
		case j.Status.Succeeded > 0:
			state = "succeeded"
		case j.Status.Failed > 0:
			state = "failed"
		}
		jobsOf[key] = append(jobsOf[key], j.Name+" ("+state+")")
	}
	var rows []Row
	add := func(kind, name string, conds []metav1.Condition) {
		r := Row{Kind: kind, Name: name, Ready: "-", Jobs: jobsOf[kind+"/"+name]}
		sort.Strings(r.Jobs)
		if c := meta.FindStatusCondition(conds, infrav1.ReadyCondition); c != nil {
			r.Ready, r.Reason = string(c.Status), c.Reason
		}
		rows = append(rows, r)
	}
	var tcs infrav1.TerraformClusterList
	if err := q.Client.List(ctx, &tcs, in); err != nil {
		return nil, err
	}
	for _, o := range tcs.Items {
		add("TerraformCluster", o.Name, o.Status.Conditions)
	}
	var tms infrav1.TerraformMachineList
	if err := q.Client.List(ctx, &tms, in); err != nil {
		return nil, err
	}
	for _, o := range tms.Items {
		add("TerraformMachine", o.Name, o.Status.Conditions)
	}
	var cl clusterv1.ClusterList
	if err := q.Client.List(ctx, &cl, in); err != nil {
		return nil, err
	}
	for _, o := range cl.Items {
		rows = append(rows, Row{Kind: "Cluster", Name: o.Name, Ready: "-", Phase: o.Status.Phase})
	}
	var ms clusterv1.MachineList
	if err := q.Client.List(ctx, &ms, in); err != nil {
		return nil, err
	}
	for _, o := range ms.Items {
		rows = append(rows, Row{Kind: "Machine", Name: o.Name, Ready: "-", Phase: o.Status.Phase})
	}
	return rows, nil
}

// Done reports whether the Quick Start reached its end: the TerraformCluster
// and one TerraformMachine Ready, the Cluster and Machine Provisioned.
func Done(rows []Row) (bool, string) {
	var missing []string
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.Kind]++
		switch r.Kind {
		case "TerraformCluster", "TerraformMachine":
			if r.Ready != "True" {
				missing = append(missing, r.Kind+" "+r.Name+" Ready="+r.Ready+"/"+r.Reason)
			}
		case "Cluster", "Machine":
			if r.Phase != string(clusterv1.ClusterPhaseProvisioned) {
				missing = append(missing, r.Kind+" "+r.Name+" phase "+r.Phase)
			}
		}
	}
	for _, k := range []string{"TerraformCluster", "TerraformMachine", "Cluster", "Machine"} {
		if seen[k] != 1 {
			missing = append(missing, fmt.Sprintf("%d %s", seen[k], k))
		}
	}
	return len(missing) == 0, strings.Join(missing, "; ")
}

// Table writes the rows as a table.
func Table(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tREADY\tREASON\tPHASE\tJOBS")
	for _, r := range rows {
		jobs := strings.Join(r.Jobs, ", ")
		if jobs == "" {
			jobs = "-"
		}
		phase := r.Phase
		if phase == "" {
			phase = "-"
		}
		reason := r.Reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, r.Name, r.Ready, reason, phase, jobs)
	}
	_ = tw.Flush()
}

// Watch prints a line whenever the Quick Start's state changes, until it is
// done or timeout passes.
func (q QuickStart) Watch(ctx context.Context, w io.Writer, timeout time.Duration) ([]Row, bool) {
	start := time.Now()
	last := ""
	var rows []Row
	_, ok := WaitFor(ctx, timeout, func() (bool, string) {
		var err error
		rows, err = q.Rows(ctx)
		if err != nil {
			return false, err.Error()
		}
		var parts []string
		for _, r := range rows {
			s := r.Kind + " " + r.Name + ": "
			if r.Phase != "" {
				s += r.Phase
			} else {
				s += "Ready=" + r.Ready + " (" + r.Reason + ")"
			}
			parts = append(parts, s)
		}
		line := strings.Join(parts, " | ")
		if line != last {
			fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), line)
			last = line
		}
		return Done(rows)
	})
	return rows, ok
}
