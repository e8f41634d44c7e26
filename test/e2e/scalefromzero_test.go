package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// TestTemplateScaleFromZero follows The Kinds and the Image Contract's
// capacity labels with Cluster API's controllers and webhooks: the no-op
// machine image, relabelled with io.captf.capacity and io.captf.node-info
// and pushed to the loopback registry, under a TerraformMachineTemplate
// that a MachineDeployment with the autoscaler's min-size 0 and max-size 3
// annotations (and spec.replicas unset) names. Its Cluster's infrastructure
// is never provisioned, so the scenario runs no Job: a machine cloned from
// the template applying and reaching Ready is TestClusterClassFlavor's.
//
//   - The template reports CapacityResolved with status.capacity and
//     status.nodeInfo from the labels.
//   - Cluster API's webhook defaults the MachineDeployment's replicas to
//     min-size 0; read the way cluster-autoscaler's clusterapi provider
//     reads a node group (Cluster API's "InfraMachineTemplate: support
//     cluster autoscaling from zero"), it is a node group of 0..3 at 0 that
//     can scale from zero (cpu and memory declared), with the template's
//     capacity, architecture and operating system.
//   - Scaled to one through the scale subresource, as the autoscaler
//     scales, the MachineDeployment gets a Machine whose TerraformMachine is
//     cloned from the template, on its image.
func TestTemplateScaleFromZero(t *testing.T) {
	t.Parallel()
	const ns, name, md, tmtName = "team-zero", "zero", "zero-workers", "zero-worker"
	w := start(t, ns)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)

	image := w.pushWithLabels(ctx, w.images.Machine, "captf/noop-machine:capacity", map[string]string{
		contract.LabelCapacity: `{"cpu":"2","memory":"4Gi","ephemeral-storage":"20Gi"}`,
		contract.LabelNodeInfo: `{"architecture":"arm64","operatingSystem":"linux"}`,
	})
	// The Cluster names a TerraformCluster that does not exist.
	cluster, _ := w.clusterObjects(ns, name, nil)
	tmt := &infrav1.TerraformMachineTemplate{ObjectMeta: metav1.ObjectMeta{Name: tmtName, Namespace: ns}}
	tmt.Spec.Template.Spec.Source.Image = image
	tmt.Spec.Template.Spec.IdentityRef = &infrav1.IdentityReference{Name: w.identity}
	w.create(ctx, cluster, tmt,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: md + "-bootstrap", Namespace: ns},
			Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
		},
	)

	w.eventually(ctx, 2*time.Minute, "the template's capacity from its image's labels", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(tmt), tmt); err != nil {
			return false, err.Error()
		}
		// Cluster API's patch helper writes the conditions before the rest
		// of the status, so the capacity can follow the condition by one
		// request.
		c := conditionOf(tmt, infrav1.CapacityResolvedCondition)
		return c.Status == metav1.ConditionTrue && c.Reason == infrav1.CapacityResolvedReason && len(tmt.Status.Capacity) > 0,
			fmt.Sprintf("CapacityResolved %s/%s: %s; capacity %s", c.Status, c.Reason, c.Message, describe(tmt.Status.Capacity))
	})
	t.Logf("the template resolved %s after the start", time.Since(begin).Round(time.Second))

	w.create(ctx, &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: md, Namespace: ns, Annotations: map[string]string{
			clusterv1.AutoscalerMinSizeAnnotation: "0", clusterv1.AutoscalerMaxSizeAnnotation: "3",
			// No control plane here answers the MachineSet's preflight checks.
			clusterv1.MachineSetSkipPreflightChecksAnnotation: "All",
		}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: name,
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: name,
				Version:     "v1.36.3",
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(md + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachineTemplate", Name: tmtName},
			}},
		},
	})
	var group nodeGroup
	w.eventually(ctx, 2*time.Minute, "the MachineDeployment at zero, read as the autoscaler reads a node group", func() (bool, string) {
		g, err := readNodeGroup(ctx, w.c, ns, md)
		if err != nil {
			return false, err.Error()
		}
		group = g
		return g.Replicas == 0, fmt.Sprintf("replicas %d", g.Replicas)
	})
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if group.Min != 0 || group.Max != 3 || !group.CanScaleFromZero() || !sameQuantities(group.Capacity, want) ||
		group.Architecture != "arm64" || group.OperatingSystem != "linux" {
		t.Fatalf("node group %s; want 0..3 at 0, able to scale from zero, capacity %s on linux/arm64", group, describe(want))
	}
	if !sameQuantities(tmt.Status.Capacity, want) || tmt.Status.NodeInfo == nil ||
		tmt.Status.NodeInfo.Architecture != "arm64" || tmt.Status.NodeInfo.OperatingSystem != "linux" {
		t.Fatalf("template status capacity %s, nodeInfo %+v; want %s and linux/arm64", describe(tmt.Status.Capacity), tmt.Status.NodeInfo, describe(want))
	}
	t.Logf("the MachineDeployment at zero read as a node group %s after the start", time.Since(begin).Round(time.Second))

	// The autoscaler scales a node group through the scale subresource.
	// Cluster API's controllers may write the MachineDeployment between the
	// read and the update; the update is retried on a conflict.
	mdObj := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: md, Namespace: ns}}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale := &autoscalingv1.Scale{}
		if err := w.c.SubResource("scale").Get(ctx, mdObj, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = 1
		return w.c.SubResource("scale").Update(ctx, mdObj, client.WithSubResourceBody(scale))
	}); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 2*time.Minute, "a TerraformMachine cloned from the template for the machine scaled from zero", func() (bool, string) {
		var tms infrav1.TerraformMachineList
		if err := w.c.List(ctx, &tms, client.InNamespace(ns), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md}); err != nil {
			return false, err.Error()
		}
		if len(tms.Items) != 1 {
			return false, fmt.Sprintf("%d TerraformMachines", len(tms.Items))
		}
		_, why := ready(&tms.Items[0])
		return tms.Items[0].Spec.Source.Image == image, why + "; image " + tms.Items[0].Spec.Source.Image
	})
	t.Logf("the machine scaled from zero has its TerraformMachine %s after the start", time.Since(begin).Round(time.Second))
	if n := w.jobCount(ctx, ns, ""); n != 0 {
		t.Errorf("%d Jobs in the namespace; want none", n)
	}
}

// pushWithLabels pushes the image from with labels added to its config as
// repo in the loopback registry, and returns repo's reference. Only the
// config and the manifest are new: the layers are shared.
func (w *world) pushWithLabels(ctx context.Context, from, repo string, labels map[string]string) string {
	w.t.Helper()
	ref, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		w.t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		w.t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		w.t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range labels {
		cf.Config.Labels[k] = v
	}
	var out v1.Image
	if out, err = mutate.ConfigFile(img, cf); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.e.PushImage(ctx, repo, out); err != nil {
		w.t.Fatal(err)
	}
	return w.e.ImageRef(repo)
}

// jobCount counts the Jobs of objects of kind in ns (every Job when kind
// is empty).
func (w *world) jobCount(ctx context.Context, ns, kind string) int {
	w.t.Helper()
	opts := []client.ListOption{client.InNamespace(ns)}
	if kind != "" {
		opts = append(opts, client.MatchingLabels{infrav1.OwnerKindLabel: kind})
	}
	var list batchv1.JobList
	if err := w.c.List(ctx, &list, opts...); err != nil {
		w.t.Fatal(err)
	}
	return len(list.Items)
}

// nodeGroup is a MachineDeployment as cluster-autoscaler's clusterapi
// provider sees a node group, following Cluster API's autoscaling-from-zero
// contract: its size bounds from the min-size and max-size annotations, its
// spec.replicas, and, for a group at zero, the node it would add: the
// capacity and nodeInfo of the infrastructure template that
// spec.template.spec.infrastructureRef names.
type nodeGroup struct {
	Min, Max, Replicas            int
	Capacity                      corev1.ResourceList
	Architecture, OperatingSystem string
}

func (g nodeGroup) String() string {
	return fmt.Sprintf("%d..%d at %d, scale from zero %t, capacity %s on %s/%s",
		g.Min, g.Max, g.Replicas, g.CanScaleFromZero(), describe(g.Capacity), g.OperatingSystem, g.Architecture)
}

// CanScaleFromZero: the autoscaler builds a node from a template only when
// it knows at least its cpu and memory.
func (g nodeGroup) CanScaleFromZero() bool {
	_, cpu := g.Capacity[corev1.ResourceCPU]
	_, mem := g.Capacity[corev1.ResourceMemory]
	return cpu && mem
}

// readNodeGroup reads MachineDeployment ns/name and its infrastructure
// template as unstructured objects, as an external program that knows no
// CAPTF type does: the template's resource is its kind in lower case plus
// "s" in the group the reference names, at the version the API server
// prefers; status.capacity is a map of quantity strings; status.nodeInfo
// has architecture and operatingSystem.
func readNodeGroup(ctx context.Context, c client.Client, ns, name string) (nodeGroup, error) {
	var g nodeGroup
	md := &unstructured.Unstructured{}
	md.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("MachineDeployment"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, md); err != nil {
		return g, err
	}
	var err error
	for key, into := range map[string]*int{clusterv1.AutoscalerMinSizeAnnotation: &g.Min, clusterv1.AutoscalerMaxSizeAnnotation: &g.Max} {
		if *into, err = strconv.Atoi(md.GetAnnotations()[key]); err != nil {
			return g, fmt.Errorf("annotation %s: %w", key, err)
		}
	}
	replicas, found, err := unstructured.NestedInt64(md.Object, "spec", "replicas")
	if err != nil || !found {
		return g, fmt.Errorf("spec.replicas unset (%v)", err)
	}
	g.Replicas = int(replicas)
	ref, _, err := unstructured.NestedStringMap(md.Object, "spec", "template", "spec", "infrastructureRef")
	if err != nil {
		return g, err
	}
	gk := schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]}
	mapping, err := c.RESTMapper().RESTMapping(gk)
	if err != nil {
		return g, err
	}
	if want := strings.ToLower(gk.Kind) + "s"; mapping.Resource.Resource != want {
		return g, fmt.Errorf("%s is served as %s; the autoscaler asks for %s", gk, mapping.Resource.Resource, want)
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref["name"]}, tmpl); err != nil {
		return g, err
	}
	capacity, _, err := unstructured.NestedStringMap(tmpl.Object, "status", "capacity")
	if err != nil {
		return g, fmt.Errorf("%s %s status.capacity: %w", gk.Kind, ref["name"], err)
	}
	g.Capacity = corev1.ResourceList{}
	for k, v := range capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return g, fmt.Errorf("%s %s status.capacity.%s: %w", gk.Kind, ref["name"], k, err)
		}
		g.Capacity[corev1.ResourceName(k)] = q
	}
	g.Architecture, _, _ = unstructured.NestedString(tmpl.Object, "status", "nodeInfo", "architecture")
	g.OperatingSystem, _, _ = unstructured.NestedString(tmpl.Object, "status", "nodeInfo", "operatingSystem")
	return g, nil
}

// describe renders a resource list sorted by name: "cpu=2, memory=4Gi".
func describe(l corev1.ResourceList) string {
	var parts []string
	for k, q := range l {
		parts = append(parts, string(k)+"="+q.String())
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// sameQuantities compares two resource lists by quantity.
func sameQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if p, ok := b[k]; !ok || q.Cmp(p) != 0 {
			return false
		}
	}
	return true
}
