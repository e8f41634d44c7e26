package certmanager_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/certmanager"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The version the package installs is the one hack/tools builds.
func TestVersionIsThePinnedModule(t *testing.T) {
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "hack", "tools", "certmanager", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "github.com/cert-manager/cert-manager " + certmanager.Version + "\n"; !strings.Contains(string(b), want) {
		t.Fatalf("hack/tools/certmanager/go.mod does not require %q", strings.TrimSpace(want))
	}
}

// The release manifest holds what cert-manager's release holds, and
// Manifest changes the Deployments' images and nothing else.
func TestManifestPointsTheDeploymentsAtTheGivenImages(t *testing.T) {
	release, err := certmanager.ReleaseManifest()
	if err != nil {
		t.Fatal(err)
	}
	relObjs, err := certmanager.Decode(release)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range relObjs {
		kinds[o.GetKind()]++
	}
	for kind, n := range map[string]int{
		"Namespace": 1, "CustomResourceDefinition": 6, "ServiceAccount": 3, "Deployment": 3, "Service": 3,
		"MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1,
	} {
		if kinds[kind] != n {
			t.Errorf("release manifest has %d %s, want %d", kinds[kind], kind, n)
		}
	}
	if relObjs[0].GetKind() != "Namespace" || relObjs[0].GetName() != certmanager.Namespace {
		t.Errorf("the release manifest starts with %s %s, not the cert-manager Namespace", relObjs[0].GetKind(), relObjs[0].GetName())
	}

	images := certmanager.Images{}
	for _, c := range certmanager.Components {
		images[c] = "127.0.0.1:5000/cert-manager/cert-manager-" + string(c) + "@sha256:" + strings.Repeat(string(c[0]), 64)
	}
	out, err := certmanager.SetImages(release, images)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := certmanager.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(relObjs) {
		t.Fatalf("the manifest has %d objects, the release %d", len(objs), len(relObjs))
	}
	var got []string
	for i, o := range objs {
		if o.GetKind() != "Deployment" {
			if !equalObjects(o, relObjs[i]) {
				t.Errorf("%s %s changed", o.GetKind(), o.GetName())
			}
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			got = append(got, c.(map[string]any)["image"].(string))
		}
	}
	want := []string{images[certmanager.Controller], images[certmanager.Webhook], images[certmanager.CAInjector]}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Deployment images %v, want %v", got, want)
	}

	delete(images, certmanager.Webhook)
	if _, err := certmanager.SetImages(release, images); err == nil {
		t.Error("SetImages accepted images without the webhook's")
	}
}

func equalObjects(a, b unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

// The images are pushed where the manifest says, and every object of the
// manifest is accepted by the API server: the CRDs become established, and
// the rest is created in the manifest's order as clusterctl creates it.
func TestManifestAppliesWithPushedImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := env.ForTest(t, env.Options{Registry: true})

	images, err := certmanager.PushImages(ctx, e.PushImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range certmanager.Components {
		ref, err := name.ParseReference(images[c])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(images[c], e.Registry+"/cert-manager/cert-manager-"+string(c)+"@sha256:") {
			t.Errorf("the %s image was pushed as %s", c, images[c])
		}
		img, err := remote.Image(ref, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{certmanager.Entrypoint(c)}) || cf.Config.User != "65532" {
			t.Errorf("the %s image runs %v as %q", c, cf.Config.Entrypoint, cf.Config.User)
		}
	}

	manifest, err := certmanager.Manifest(images)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := certmanager.Decode(manifest)
	if err != nil {
		t.Fatal(err)
	}
	create(ctx, t, e.Client, objs)

	var dep unstructured.Unstructured
	dep.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: certmanager.Namespace, Name: "cert-manager-webhook"}, &dep); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if image := containers[0].(map[string]any)["image"]; image != images[certmanager.Webhook] {
		t.Errorf("the webhook Deployment runs %v", image)
	}
}

// create creates the objects in order, as clusterctl does, waiting for each
// CRD to be established before anything that may use it.
func create(ctx context.Context, t *testing.T, c client.Client, objs []unstructured.Unstructured) {
	t.Helper()
	for i := range objs {
		obj := objs[i].DeepCopy()
		// An established CRD's kind reaches the API server's discovery,
		// and so the client's mapper, a moment later: a kind not known
		// yet is retried until it is.
		waitFor(ctx, t, "create "+obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName(), func() (bool, error) {
			err := c.Create(ctx, obj.DeepCopy())
			switch {
			case err == nil || apierrors.IsAlreadyExists(err):
				return true, nil
			case meta.IsNoMatchError(err):
				return false, err
			}
			t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			return false, err
		})
		if obj.GetKind() == "CustomResourceDefinition" {
			waitFor(ctx, t, "CRD "+obj.GetName()+" established", func() (bool, error) {
				var crd unstructured.Unstructured
				crd.SetGroupVersionKind(obj.GroupVersionKind())
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &crd); err != nil {
					return false, err
				}
				conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
				for _, cond := range conds {
					m := cond.(map[string]any)
					if m["type"] == "Established" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
		}
	}
}

// waitFor polls check every 100 ms until it reports true, failing the test
// at ctx's deadline.
func waitFor(ctx context.Context, t *testing.T, what string, check func() (bool, error)) {
	t.Helper()
	var last error
	for {
		ok, err := check()
		if ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// The controller binary, run as a process against the environment with
// the manifest's CRDs, issues a self-signed Certificate into its Secret.
func TestControllerIssuesASelfSignedCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := env.ForTest(t, env.Options{})

	release, err := certmanager.ReleaseManifest()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := certmanager.Decode(release)
	if err != nil {
		t.Fatal(err)
	}
	var crds []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	create(ctx, t, e.Client, crds)

	bin, err := certmanager.Binary(certmanager.Controller)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartProcess("cert-manager-controller", []string{bin,
		"--kubeconfig=" + e.KubeconfigPath,
		"--leader-elect=false",
		"--cluster-resource-namespace=kube-system",
		"--metrics-listen-address=0",
		"--healthz-listen-address=0",
		"--v=2",
	}); err != nil {
		t.Fatal(err)
	}

	ns := "certs"
	if _, err := e.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	issuer := object("cert-manager.io/v1", "Issuer", ns, "selfsigned", map[string]any{"selfSigned": map[string]any{}})
	cert := object("cert-manager.io/v1", "Certificate", ns, "serving", map[string]any{
		"secretName": "serving-tls",
		"dnsNames":   []any{"captf-webhook-service.captf-system.svc"},
		"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer"},
	})
	create(ctx, t, e.Client, []unstructured.Unstructured{issuer, cert})

	waitFor(ctx, t, "the Certificate to be Ready", func() (bool, error) {
		var got unstructured.Unstructured
		got.SetGroupVersionKind(cert.GroupVersionKind())
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(&cert), &got); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Ready" {
				return m["status"] == "True", fmt.Errorf("Ready=%v: %v", m["status"], m["message"])
			}
		}
		return false, nil
	})

	secret, err := e.Clientset.CoreV1().Secrets(ns).Get(ctx, "serving-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS || len(secret.Data["tls.key"]) == 0 {
		t.Errorf("Secret serving-tls is a %s with keys %v", secret.Type, keys(secret.Data))
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crt.DNSNames, []string{"captf-webhook-service.captf-system.svc"}) {
		t.Errorf("the certificate names %v", crt.DNSNames)
	}
	if err := crt.CheckSignature(crt.SignatureAlgorithm, crt.RawTBSCertificate, crt.Signature); err != nil || string(crt.RawIssuer) != string(crt.RawSubject) {
		t.Errorf("the certificate is not self-signed: %v", err)
	}
	if secret.Annotations["cert-manager.io/certificate-name"] != "serving" {
		t.Errorf("Secret annotations %v do not name the Certificate", secret.Annotations)
	}
}

func object(apiVersion, kind, ns, name string, spec map[string]any) unstructured.Unstructured {
	o := unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The webhook and cainjector binaries, run as processes, give the API
// server what clusterctl's readiness check needs from cert-manager: the
// cainjector copies the CA of the webhook's serving certificate into both
// webhook configurations, and the API server then calls the webhook over
// verified TLS, which admits a valid Issuer and denies an invalid one.
// The configurations here call the webhook at https://localhost:<port>
// instead of through its Service, which needs pod networking.
func TestWebhookAnswersTheAPIServerWithTheInjectedCA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := env.ForTest(t, env.Options{})

	release, err := certmanager.ReleaseManifest()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := certmanager.Decode(release)
	if err != nil {
		t.Fatal(err)
	}
	port, healthz := freePort(t), freePort(t)
	var install []unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition":
			install = append(install, o)
		case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for i, h := range hooks {
				cc := h.(map[string]any)["clientConfig"].(map[string]any)
				svc := cc["service"].(map[string]any)
				delete(cc, "service")
				cc["url"] = fmt.Sprintf("https://localhost:%d%s", port, svc["path"])
				hooks[i] = h
			}
			if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
				t.Fatal(err)
			}
			install = append(install, o)
		}
	}
	create(ctx, t, e.Client, install)

	start := func(c certmanager.Component, args ...string) {
		t.Helper()
		bin, err := certmanager.Binary(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.StartProcess("cert-manager-"+string(c), append([]string{bin, "--kubeconfig=" + e.KubeconfigPath, "--v=2"}, args...)); err != nil {
			t.Fatal(err)
		}
	}
	start(certmanager.Webhook,
		fmt.Sprintf("--secure-port=%d", port), fmt.Sprintf("--healthz-port=%d", healthz),
		"--dynamic-serving-ca-secret-namespace="+certmanager.Namespace,
		"--dynamic-serving-ca-secret-name=cert-manager-webhook-ca",
		"--dynamic-serving-dns-names=localhost",
		"--metrics-listen-address=0")
	start(certmanager.CAInjector, "--leader-elect=false", "--metrics-listen-address=0")

	var ca []byte
	waitFor(ctx, t, "the webhook's CA in both webhook configurations", func() (bool, error) {
		s, err := e.Clientset.CoreV1().Secrets(certmanager.Namespace).Get(ctx, "cert-manager-webhook-ca", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ca = s.Data["ca.crt"]
		if len(ca) == 0 {
			return false, fmt.Errorf("the CA Secret has no ca.crt")
		}
		v, err := e.Clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "cert-manager-webhook", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		m, err := e.Clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "cert-manager-webhook", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return string(v.Webhooks[0].ClientConfig.CABundle) == string(ca) && string(m.Webhooks[0].ClientConfig.CABundle) == string(ca),
			fmt.Errorf("caBundle not injected yet")
	})

	// clusterctl's check: create until the API server accepts it.
	issuer := object("cert-manager.io/v1", "Issuer", certmanager.Namespace, "selfsigned", map[string]any{"selfSigned": map[string]any{}})
	waitFor(ctx, t, "the API server to admit an Issuer through the webhook", func() (bool, error) {
		err := e.Client.Create(ctx, issuer.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
	invalid := object("cert-manager.io/v1", "Issuer", certmanager.Namespace, "no-type", map[string]any{})
	err = e.Client.Create(ctx, &invalid)
	if err == nil || !strings.Contains(err.Error(), "webhook.cert-manager.io") {
		t.Fatalf("an Issuer of no type was not denied by cert-manager's webhook: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
