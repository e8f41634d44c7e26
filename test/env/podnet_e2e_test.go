package env_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/podnet"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/testimage"
)

const webNS = "web"

// TestPodNetwork runs a two-replica Deployment behind a Service and an
// admission webhook, as the release's manager and cert-manager run in a
// cluster: each pod on its own address and the same port, Ready only once
// its readiness probe passes, reaching the API server with its in-cluster
// configuration, called by the API server through the Service; a deleted
// pod is replaced and the webhook keeps answering; a pod failing its
// liveness probe is restarted; and Stop leaves no interface or namespace
// of the environment's network behind.
func TestPodNetwork(t *testing.T) {
	e := env.ForTest(t, env.Options{Logger: testLogger, Kubelet: true, Registry: true, PodNetwork: true})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cs := e.Clientset
	pn := e.PodNetwork
	if pn == nil {
		t.Fatal("Env.PodNetwork is nil with Options.PodNetwork")
	}
	hostIP := pn.HostIP.String()
	t.Logf("pod network %d: %s, host %s on %s", pn.Index, pn.Subnet, hostIP, pn.Bridge)
	if e.APIServerHost != hostIP || !strings.Contains(e.Config.Host, hostIP) {
		t.Fatalf("API server at %s (%s), want the network's host address %s", e.APIServerHost, e.Config.Host, hostIP)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, e.Kubelet.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := node.Status.Addresses[0]; a.Type != corev1.NodeInternalIP || a.Address != hostIP {
		t.Errorf("Node address %+v, want InternalIP %s", a, hostIP)
	}

	image := pushPodprog(ctx, t, e)
	caPEM := setupWebNamespace(ctx, t, cs)

	const readyAfter = 3 * time.Second
	created := time.Now()
	if _, err := cs.AppsV1().Deployments(webNS).Create(ctx, webDeployment(image, hostIP, readyAfter), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var pods []corev1.Pod
	t.Run("two replicas get their own addresses and are Ready only once their readiness probe passes", func(t *testing.T) {
		seenRunning := map[string]time.Time{} // first seen running and not ready
		seenReady := map[string]time.Time{}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := cs.CoreV1().Pods(webNS).List(ctx, metav1.ListOptions{LabelSelector: "app=podweb"})
			if err != nil {
				return false, err
			}
			for _, p := range list.Items {
				running := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
				ready := podReady(&p)
				if running && !ready && p.Status.ContainerStatuses[0].Ready {
					return false, fmt.Errorf("pod %s: container ready while the pod is not", p.Name)
				}
				if running && !ready {
					if _, ok := seenRunning[p.Name]; !ok {
						seenRunning[p.Name] = time.Now()
					}
				}
				if ready {
					if _, ok := seenReady[p.Name]; !ok {
						seenReady[p.Name] = time.Now()
					}
				}
			}
			pods = readyPods(list.Items)
			return len(pods) == 2, nil
		})
		if err != nil {
			list, _ := cs.CoreV1().Pods(webNS).List(ctx, metav1.ListOptions{})
			t.Fatalf("the Deployment's two pods did not become Ready: %v\n%s", err, describePods(e, list.Items))
		}
		for _, p := range pods {
			running, ok := seenRunning[p.Name]
			if !ok {
				t.Errorf("pod %s was never seen running and not ready", p.Name)
				continue
			}
			if d := seenReady[p.Name].Sub(running); d < readyAfter-time.Second {
				t.Errorf("pod %s became Ready %s after it was seen running; its readiness probe passes only %s after its start", p.Name, d, readyAfter)
			}
			t.Logf("pod %s (%s): Ready %s after the Deployment's creation, %s after it was first seen running",
				p.Name, p.Status.PodIP, seenReady[p.Name].Sub(created).Round(10*time.Millisecond), seenReady[p.Name].Sub(running).Round(10*time.Millisecond))
		}
		a, b := net.ParseIP(pods[0].Status.PodIP), net.ParseIP(pods[1].Status.PodIP)
		if a == nil || b == nil || a.Equal(b) || !pn.Subnet.Contains(a) || !pn.Subnet.Contains(b) || a.Equal(pn.HostIP) || b.Equal(pn.HostIP) {
			t.Fatalf("pod addresses %q and %q: want two distinct pod addresses of %s", pods[0].Status.PodIP, pods[1].Status.PodIP, pn.Subnet)
		}
		for _, p := range pods {
			if p.Status.HostIP != hostIP || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
				t.Errorf("pod %s: hostIP %s, podIPs %v", p.Name, p.Status.HostIP, p.Status.PodIPs)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("each pod serves on its own address from the host, and reached the API server with its in-cluster configuration", func(t *testing.T) {
		for _, p := range pods {
			got, err := httpsGet(ctx, "https://"+net.JoinHostPort(p.Status.PodIP, "8443")+"/")
			if err != nil {
				t.Fatalf("GET / of pod %s: %v", p.Name, err)
			}
			// POD_NAME and POD_IP come from the downward API.
			if want := p.Name + " " + p.Status.PodIP; got != want {
				t.Errorf("pod at %s answered %q, want %q", p.Status.PodIP, got, want)
			}
			logs, _ := e.Logs(webNS, p.Name, "web")
			for _, want := range []string{
				"env KUBERNETES_SERVICE_HOST ok",
				"GET /api/v1/namespaces/web/pods/" + p.Name + " -> 200 ok", // its ServiceAccount's Role
				"GET /api/v1/namespaces/web/secrets -> 403 ok",
			} {
				if !strings.Contains(logs, want) {
					t.Errorf("pod %s's log lacks %q:\n%s", p.Name, want, logs)
				}
			}
		}
	})

	t.Run("a Service's EndpointSlice lists both pods", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "podweb", Namespace: webNS},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "podweb"},
				Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
			},
		}
		if _, err := cs.CoreV1().Services(webNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEndpoints(ctx, t, cs, podIPs(pods))
	})
	if t.Failed() {
		return
	}

	t.Run("the API server calls a validating webhook through the Service", func(t *testing.T) {
		createWebhook(ctx, t, cs, caPEM)
		// The API server picks the configuration up within a few seconds.
		var denial error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			denial = createConfigMap(ctx, cs, "deny-first")
			if denial == nil {
				_ = cs.CoreV1().ConfigMaps("hooked").Delete(ctx, "deny-first", metav1.DeleteOptions{})
				return false, nil
			}
			return strings.Contains(denial.Error(), "denied by "), nil
		})
		if err != nil {
			t.Fatalf("the webhook never denied a ConfigMap: %v (last answer: %v)", err, denial)
		}
		if !apierrors.IsForbidden(denial) {
			t.Errorf("the denial %v is not Forbidden", denial)
		}
		msg := denial.Error()
		if err := createConfigMap(ctx, cs, "allow-me"); err != nil {
			t.Errorf("the webhook did not allow allow-me: %v", err)
		}
		t.Logf("webhook answer: %s", msg)
	})
	if t.Failed() {
		return
	}

	t.Run("a deleted pod is replaced and the webhook keeps answering", func(t *testing.T) {
		gone := pods[0]
		if err := cs.CoreV1().Pods(webNS).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		var now []corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := cs.CoreV1().Pods(webNS).List(ctx, metav1.ListOptions{LabelSelector: "app=podweb"})
			if err != nil {
				return false, err
			}
			now = readyPods(list.Items)
			return len(list.Items) == 2 && len(now) == 2 && !slices.ContainsFunc(now, func(p corev1.Pod) bool { return p.Name == gone.Name }), nil
		})
		if err != nil {
			list, _ := cs.CoreV1().Pods(webNS).List(ctx, metav1.ListOptions{})
			t.Fatalf("no Ready replacement for %s: %v\n%s", gone.Name, err, describePods(e, list.Items))
		}
		t.Logf("replacement Ready %s after the deletion", time.Since(deleted).Round(10*time.Millisecond))
		waitEndpoints(ctx, t, cs, podIPs(now))
		// The deleted pod's namespace and veth are gone.
		name := podnet.PodName(pn.Index, int(net.ParseIP(gone.Status.PodIP).To4()[3]))
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return !slices.Contains(networkLeftovers(t, pn.Index), "netns "+name) && !slices.Contains(networkLeftovers(t, pn.Index), "link "+name), nil
		}); err != nil {
			t.Errorf("the deleted pod's network %s is still there: %v", name, networkLeftovers(t, pn.Index))
		}

		answered := map[string]int{}
		for i := range 20 {
			err := createConfigMap(ctx, cs, fmt.Sprintf("deny-%d", i))
			if err == nil || !strings.Contains(err.Error(), "denied by ") {
				t.Fatalf("call %d: %v, want a denial by the webhook", i, err)
			}
			for _, p := range now {
				if strings.Contains(err.Error(), "denied by "+p.Name+" "+p.Status.PodIP) {
					answered[p.Name]++
				}
			}
		}
		for _, p := range now {
			if answered[p.Name] == 0 {
				t.Errorf("pod %s never answered the webhook's 20 calls (answers: %v)", p.Name, answered)
			}
		}
		t.Logf("webhook answers per pod: %v", answered)
	})

	t.Run("a container failing its liveness probe is restarted", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "sick", Namespace: webNS},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](2),
				Containers: []corev1.Container{{
					Name: "main", Image: image, Command: []string{testimage.ProgramPath},
					Args:  []string{"--serve=:8080", "--unhealthy-after=2s"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{PeriodSeconds: 1,
						ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
					LivenessProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2,
						ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
				}},
			},
		}
		if _, err := cs.CoreV1().Pods(webNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		wasReady := false
		var last *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(webNS).Get(ctx, "sick", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = p
			wasReady = wasReady || podReady(p)
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1, nil
		})
		if err != nil {
			t.Fatalf("the container was not restarted: %v\n%s", err, describePods(e, []corev1.Pod{*last}))
		}
		if !wasReady {
			t.Errorf("the pod was never Ready though its tcpSocket readiness probe passes until the restart")
		}
		if logs, _ := e.Logs(webNS, "sick", "main"); !strings.Contains(logs, "received SIGTERM") {
			t.Errorf("the unhealthy container did not get SIGTERM; log:\n%s", logs)
		}
	})

	// Stop now, to see the network go.
	index := pn.Index
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := networkLeftovers(t, index); len(left) > 0 {
		t.Errorf("left after Stop: %v", left)
	}
}

// TestPodNetworkOfTwoEnvironments starts two environments with pod
// networks side by side: each gets a network of its own, and its API
// server is on its own network's host address.
func TestPodNetworkOfTwoEnvironments(t *testing.T) {
	var envs [2]*env.Env
	errs := make(chan error, 2)
	for i := range envs {
		go func() {
			var err error
			envs[i], err = env.Start(context.Background(), env.Options{Logger: testLogger, PodNetwork: true})
			errs <- err
		}()
	}
	for range envs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, e := range envs {
		if e != nil {
			t.Cleanup(func() { _ = e.Stop() })
		}
	}
	if t.Failed() {
		return
	}
	a, b := envs[0].PodNetwork, envs[1].PodNetwork
	if a.Index == b.Index || a.Subnet.String() == b.Subnet.String() {
		t.Fatalf("both environments got network %d (%s)", a.Index, a.Subnet)
	}
	for _, e := range envs {
		if _, err := e.Clientset.Discovery().ServerVersion(); err != nil {
			t.Errorf("API server at %s: %v", e.Config.Host, err)
		}
	}
	for _, e := range envs {
		index := e.PodNetwork.Index
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		if left := networkLeftovers(t, index); len(left) > 0 {
			t.Errorf("left after Stop: %v", left)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readyPods(list []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range list {
		if p.DeletionTimestamp == nil && podReady(&p) {
			out = append(out, p)
		}
	}
	return out
}

func podIPs(pods []corev1.Pod) []string {
	var ips []string
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	return ips
}

func describePods(e *env.Env, pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "pod %s: phase %s ip %s conditions %+v containers %+v\n", p.Name, p.Status.Phase, p.Status.PodIP, p.Status.Conditions, p.Status.ContainerStatuses)
		for _, c := range p.Spec.Containers {
			logs, _ := e.Logs(p.Namespace, p.Name, c.Name)
			fmt.Fprintf(&b, "log of %s:\n%s\n", c.Name, logs)
		}
	}
	return b.String()
}

// waitEndpoints waits until the podweb Service's EndpointSlices list
// exactly ips, each ready, on port 8443.
func waitEndpoints(ctx context.Context, t *testing.T, cs kubernetes.Interface, ips []string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.DiscoveryV1().EndpointSlices(webNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=podweb"})
		if err != nil {
			return false, err
		}
		got = nil
		for _, s := range list.Items {
			if len(s.Ports) != 1 || s.Ports[0].Port == nil || *s.Ports[0].Port != 8443 {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					got = append(got, ep.Addresses...)
				}
			}
		}
		slices.Sort(got)
		return slices.Equal(got, ips), nil
	})
	if err != nil {
		t.Fatalf("the Service's ready endpoints are %v, want %v: %v", got, ips, err)
	}
}

// httpsGet GETs url without checking the certificate and returns the body.
func httpsGet(ctx context.Context, url string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test server's own certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return strings.TrimSpace(string(b)), err
}

func createConfigMap(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().ConfigMaps("hooked").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// networkLeftovers lists the interfaces and network namespaces of pod
// network index.
func networkLeftovers(t *testing.T, index int) []string {
	t.Helper()
	out, err := podnet.Leftovers(index)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setupWebNamespace creates the web namespace with a Role letting its
// default ServiceAccount read its pods, the webhook's serving certificate
// (for podweb.web.svc, from a new CA, whose PEM it returns) and the hooked
// namespace the webhook watches.
func setupWebNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface) []byte {
	t.Helper()
	caPEM, certPEM, keyPEM := webhookCerts(t, "podweb."+webNS+".svc")
	for _, create := range []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webNS}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hooked",
				Labels: map[string]string{"captf.test/podweb": "on"}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(webNS).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(webNS).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: webNS}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(webNS).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "podweb-tls"},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
			}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
	// Pods of the namespace need its ServiceAccount.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(webNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no default ServiceAccount in %s: %v", webNS, err)
	}
	return caPEM
}

func webDeployment(image, apiHost string, readyAfter time.Duration) *appsv1.Deployment {
	labels := map[string]string{"app": "podweb"}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "podweb", Namespace: webNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name: "web", Image: image,
						Command: []string{testimage.ProgramPath},
						Args: []string{
							"--expect-env=KUBERNETES_SERVICE_HOST=" + apiHost,
							"--api-get=200=/api/v1/namespaces/web/pods/$(POD_NAME)",
							"--api-get=403=/api/v1/namespaces/web/secrets",
							"--serve=:8443", "--tls-dir=/tls", "--ready-after=" + readyAfter.String(),
						},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: field("metadata.name")},
							{Name: "POD_IP", ValueFrom: field("status.podIP")},
						},
						Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
						ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/readyz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}}},
						LivenessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "podweb-tls"}}}},
				},
			},
		},
	}
}

func createWebhook(ctx context.Context, t *testing.T, cs kubernetes.Interface, caPEM []byte) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "podweb"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "podweb.captf.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: webNS, Name: "podweb", Path: ptr.To("/validate"), Port: ptr.To[int32](443)},
				CABundle: caPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"captf.test/podweb": "on"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// webhookCerts returns a new CA and a serving certificate and key it
// signed for dnsName, in PEM.
func webhookCerts(t *testing.T, dnsName string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podweb-ca"},
		NotBefore: now, NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: now, NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// With Options.Separate the child's kubelet puts its pods on the network
// the calling process made, and Stop removes it once the child has ended.
func TestPodNetworkSeparate(t *testing.T) {
	dir := t.TempDir()
	envBin, err := env.BuildEnvBinary(context.Background(), filepath.Join(dir, "prebuilt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := env.Start(ctx, env.Options{Logger: testLogger, Separate: true, EnvBinary: envBin, Kubelet: true, Registry: true,
		PodNetwork: true, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = e.Stop()
		}
	}()
	pn := e.PodNetwork
	img, err := testimage.Image()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.PushImage(ctx, "captf/podprog:test", img); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "served", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "main", Image: e.ImageRef("captf/podprog:test"), Command: []string{testimage.ProgramPath},
				Args: []string{"--expect-env=KUBERNETES_SERVICE_HOST=" + pn.HostIP.String(), "--api-get=403=/api/v1/namespaces/default/secrets", "--serve=:8080"},
				Env:  []corev1.EnvVar{{Name: "POD_NAME", Value: "served"}, {Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/readyz", Port: intstr.FromInt32(8080)}}},
			}},
		},
	}
	if _, err := e.Clientset.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = e.Clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && podReady(got), nil
	}); err != nil {
		t.Fatalf("the pod did not become Ready: %v\n%s", err, describePods(e, []corev1.Pod{*got}))
	}
	ip := net.ParseIP(got.Status.PodIP)
	if ip == nil || !pn.Subnet.Contains(ip) || ip.Equal(pn.HostIP) {
		t.Fatalf("pod address %q, want one of %s", got.Status.PodIP, pn.Subnet)
	}
	res, err := http.Get("http://" + net.JoinHostPort(got.Status.PodIP, "8080") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if want := "served " + got.Status.PodIP; strings.TrimSpace(string(body)) != want {
		t.Errorf("the pod answered %q, want %q", body, want)
	}
	index := pn.Index
	stopped = true
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := networkLeftovers(t, index); len(left) > 0 {
		t.Errorf("left after Stop: %v", left)
	}
}
