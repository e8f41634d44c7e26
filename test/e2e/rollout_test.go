package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestClusterClassControlPlaneRollout rolls a KubeadmControlPlane out to a
// new machine image (book: Templates and ClusterClass, "changing the
// machineImage topology variable rolls the machines out"): ClusterClass
// noop of templates/clusterclass-noop.yaml with its
// KubeadmControlPlaneTemplate given an external etcd and maxSurge 1, and a
// Cluster of cluster-template-clusterclass.yaml with one control-plane
// machine and no worker.
//
// The workload cluster is this environment's API server (reachWorkload)
// with its kubelets played by framework.Workload: the control-plane Node
// and its kube-apiserver, kube-controller-manager and kube-scheduler static
// pods, which KubeadmControlPlane's preflight checks read before it adds a
// machine and before it removes one. With an external etcd there is no
// etcd member to inspect (a managed etcd is reached through a port-forward
// to its pod, which no played kubelet serves).
//
// KubeadmControlPlane v1.14.2 finds the first machine's KubeadmConfig (a
// kubeadm init) out of date with its spec on this external etcd and
// replaces it with a joined one before anything else: the scenario waits
// for the control plane to settle on one up-to-date Machine first. Then
// changing machineImage makes KubeadmControlPlane create a second machine
// on a TerraformMachineTemplate of the new image (apply Job), wait for its
// Node and static pods, then delete the old one: its Machine and its
// TerraformMachine go, through a destroy Job.
func TestClusterClassControlPlaneRollout(t *testing.T) {
	t.Parallel()
	const ns, name = "team-cprollout", "cpr"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	jobs := w.recordJobs(ns)
	begin := time.Now()

	w.createClusterClass(ctx, ns, func(o *unstructured.Unstructured) {
		if o.GetKind() == "KubeadmControlPlaneTemplate" {
			externalEtcd(t, o)
		}
	})
	w.externalEtcdCertificates(ctx, ns, name)
	w.reachWorkload(ctx, ns, name)
	wl := w.playWorkload(ns, name, framework.WorkloadOptions{})
	objs, err := framework.Template(root(t), "cluster-template-clusterclass.yaml", map[string]string{
		"CLUSTER_NAME": name, "NAMESPACE": ns, "KUBERNETES_VERSION": "v1.36.3",
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "0",
		"TERRAFORM_CLUSTER_IMAGE": w.images.Cluster, "TERRAFORM_MACHINE_IMAGE": w.images.Machine,
		"TERRAFORM_IDENTITY_NAME": w.identity,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		w.eventually(ctx, 2*time.Minute, "the Cluster on ClusterClass noop to be accepted", func() (bool, string) {
			err := framework.Apply(ctx, w.c, o.DeepCopy())
			return err == nil, fmt.Sprint(err)
		})
	}

	// Why KubeadmControlPlane found each Machine out of date, for the log.
	outdated := map[string]string{}
	noteOutdated := func() {
		var all clusterv1.MachineList
		if err := w.c.List(ctx, &all, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err == nil {
			for i := range all.Items {
				if u := conditionOf(&all.Items[i], clusterv1.MachineUpToDateCondition); u.Status == metav1.ConditionFalse {
					outdated[all.Items[i].Name] = u.Reason + ": " + u.Message
				}
			}
		}
	}
	// Up to date too: KubeadmControlPlane replaces the first machine before
	// the image changes (see the log); the rollout below starts from a
	// settled control plane.
	old := &clusterv1.Machine{}
	w.eventually(ctx, 8*time.Minute, "the control plane to settle on one up-to-date Machine with its Node and healthy static pods, its TerraformMachine Ready", func() (bool, string) {
		noteOutdated()
		ms, why := w.controlPlaneMachines(ctx, ns, name)
		if len(ms) != 1 || !conditions.IsTrue(&ms[0], clusterv1.MachineUpToDateCondition) {
			return false, why
		}
		*old = ms[0]
		cps, _, err := w.clusterMachines(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		ok, r := readyOn(cps, w.images.Machine)
		return ok && old.Status.NodeRef.IsDefined() && staticPodsHealthy(old), why + "; " + r
	})

	next := w.pushWithLabels(ctx, w.images.Machine, strings.TrimPrefix(w.images.Machine, w.e.Registry+"/")+"-cp-rollout",
		map[string]string{contract.LabelVersion: "v0.1.2"})
	w.setMachineImage(ctx, ns, name, next)
	rollout := time.Now()

	oldTM := old.Spec.InfrastructureRef.Name
	destroyed := false
	w.eventually(ctx, 8*time.Minute, "the control plane to roll out to the new image: a new Machine with its Node, the old Machine and TerraformMachine deleted (destroy Job)", func() (bool, string) {
		noteOutdated()
		var why []string
		var js batchv1.JobList
		if err := w.c.List(ctx, &js, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerNameLabel: oldTM, infrav1.OpLabel: string(infrav1.OperationDestroy)}); err != nil {
			return false, err.Error()
		}
		destroyed = destroyed || len(js.Items) > 0
		if !destroyed {
			why = append(why, "no destroy Job seen for "+oldTM)
		}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(old), &clusterv1.Machine{}); !apierrors.IsNotFound(err) {
			why = append(why, fmt.Sprintf("old Machine %s still there (%v)", old.Name, err))
		}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldTM}, &infrav1.TerraformMachine{}); !apierrors.IsNotFound(err) {
			why = append(why, fmt.Sprintf("old TerraformMachine %s still there (%v)", oldTM, err))
		}
		ms, mwhy := w.controlPlaneMachines(ctx, ns, name)
		if len(ms) != 1 || ms[0].Name == old.Name || !ms[0].Status.NodeRef.IsDefined() || !conditions.IsTrue(&ms[0], clusterv1.MachineReadyCondition) {
			why = append(why, mwhy)
		}
		cps, _, err := w.clusterMachines(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		if ok, r := readyOn(cps, next); !ok || len(cps) != 1 {
			why = append(why, fmt.Sprintf("%d control-plane TerraformMachines; %s", len(cps), r))
		}
		var kcps controlplanev1.KubeadmControlPlaneList
		if err := w.c.List(ctx, &kcps, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil || len(kcps.Items) != 1 {
			return false, fmt.Sprintf("KubeadmControlPlanes %d, %v", len(kcps.Items), err)
		}
		st := kcps.Items[0].Status
		if ptr.Deref(st.Replicas, -1) != 1 || ptr.Deref(st.UpToDateReplicas, -1) != 1 || ptr.Deref(st.ReadyReplicas, -1) != 1 {
			c := conditionOf(&kcps.Items[0], controlplanev1.KubeadmControlPlaneRollingOutCondition)
			why = append(why, fmt.Sprintf("KubeadmControlPlane replicas %d, up-to-date %d, ready %d (want 1 each); RollingOut=%s/%s: %s",
				ptr.Deref(st.Replicas, -1), ptr.Deref(st.UpToDateReplicas, -1), ptr.Deref(st.ReadyReplicas, -1), c.Status, c.Reason, c.Message))
		}
		if err := wl.Err(); err != nil && len(why) > 0 {
			why = append(why, "workload: "+err.Error())
		}
		return len(why) == 0, strings.Join(why, "; ")
	})
	t.Logf("control plane rolled out %s after the machineImage change (%s after the start)",
		time.Since(rollout).Round(time.Second), time.Since(begin).Round(time.Second))
	t.Logf("the control plane settled on Machine %s before the machineImage change", old.Name)
	for m, why := range outdated {
		t.Logf("Machine %s found out of date: %s", m, why)
	}
	for _, j := range jobs() {
		t.Logf("Job %s", j)
	}
}

// externalEtcd gives a KubeadmControlPlaneTemplate an external etcd and a
// rollout that adds the new machine before it removes the old one
// (maxSurge 1, which a single control-plane machine needs).
func externalEtcd(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	etcd := map[string]any{
		"endpoints": []any{"https://127.0.0.1:2379"},
		"caFile":    "/etc/kubernetes/pki/etcd/ca.crt",
		"certFile":  "/etc/kubernetes/pki/apiserver-etcd-client.crt",
		"keyFile":   "/etc/kubernetes/pki/apiserver-etcd-client.key",
	}
	if err := unstructured.SetNestedMap(o.Object, etcd, "spec", "template", "spec", "kubeadmConfigSpec", "clusterConfiguration", "etcd", "external"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(o.Object, int64(1), "spec", "template", "spec", "rollout", "strategy", "rollingUpdate", "maxSurge"); err != nil {
		t.Fatal(err)
	}
}

// externalEtcdCertificates writes the two Secrets Cluster API reads for an
// external etcd, which it never generates: the etcd CA
// (<cluster>-etcd) and the API server's etcd client certificate
// (<cluster>-apiserver-etcd-client).
func (w *world) externalEtcdCertificates(ctx context.Context, ns, cluster string) {
	w.t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		w.t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		w.t.Fatal(err)
	}
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		w.t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-etcd-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		w.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		w.t.Fatal(err)
	}
	certPEM := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster}
	w.create(ctx,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secret.Name(cluster, secret.EtcdCA), Namespace: ns, Labels: labels},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{secret.TLSCrtDataName: certPEM(caDER)},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secret.Name(cluster, secret.APIServerEtcdClient), Namespace: ns, Labels: labels},
			Type:       clusterv1.ClusterSecretType,
			Data: map[string][]byte{
				secret.TLSCrtDataName: certPEM(leafDER),
				secret.TLSKeyDataName: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
			},
		})
}

// controlPlaneMachines lists the control-plane Machines of Cluster ns/name
// that are not deleting, with a description of every one.
func (w *world) controlPlaneMachines(ctx context.Context, ns, name string) ([]clusterv1.Machine, string) {
	var ms clusterv1.MachineList
	if err := w.c.List(ctx, &ms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name},
		client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, err.Error()
	}
	var live []clusterv1.Machine
	var why []string
	for _, m := range ms.Items {
		state := "running"
		if !m.DeletionTimestamp.IsZero() {
			state = "deleting"
		} else {
			live = append(live, m)
		}
		r, u := conditionOf(&m, clusterv1.MachineReadyCondition), conditionOf(&m, clusterv1.MachineUpToDateCondition)
		why = append(why, fmt.Sprintf("Machine %s %s, providerID %q, nodeRef %q, static pods healthy %v, Ready=%s/%s: %s, UpToDate=%s/%s: %s",
			m.Name, state, m.Spec.ProviderID, m.Status.NodeRef.Name, staticPodsHealthy(&m), r.Status, r.Reason, r.Message, u.Status, u.Reason, u.Message))
	}
	return live, fmt.Sprintf("control-plane Machines: %s", strings.Join(why, "; "))
}

// staticPodsHealthy: KubeadmControlPlane found the Machine's
// kube-apiserver, kube-controller-manager and kube-scheduler pods healthy.
func staticPodsHealthy(m *clusterv1.Machine) bool {
	for _, typ := range []string{
		controlplanev1.KubeadmControlPlaneMachineAPIServerPodHealthyCondition,
		controlplanev1.KubeadmControlPlaneMachineControllerManagerPodHealthyCondition,
		controlplanev1.KubeadmControlPlaneMachineSchedulerPodHealthyCondition,
	} {
		if c := conditionOf(m, typ); c.Status != metav1.ConditionTrue {
			return false
		}
	}
	return true
}
