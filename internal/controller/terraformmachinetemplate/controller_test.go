package terraformmachinetemplate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

var (
	cfg    *rest.Config
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	_ = clientgoscheme.AddToScheme(scheme)
	_ = infrav1.AddToScheme(scheme)
	// The pure tests need no API server.
	if !envtestWanted() {
		os.Exit(m.Run())
	}
	root, err := tools.RepoRoot()
	if err != nil {
		panic(err)
	}
	env, c, err := envtest.Start(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		panic(err)
	}
	cfg = c
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// envtestWanted is false when -run selects only tests that need no API
// server.
func envtestWanted() bool {
	for i, a := range os.Args {
		run := ""
		switch {
		case strings.HasPrefix(a, "-test.run="):
			run = strings.TrimPrefix(a, "-test.run=")
		case a == "-test.run" && i+1 < len(os.Args):
			run = os.Args[i+1]
		default:
			continue
		}
		return strings.Contains(run, "TestTemplate") || run == ""
	}
	return true
}

func startManager(t *testing.T) client.Client {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Logger:     zap.New(zap.UseDevMode(true), zap.WriteTo(envtest.TestLog(t))),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Setup(ctx, mgr, Options{AllowPrivateRegistries: true, Concurrency: 2, RetryInterval: 500 * time.Millisecond, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func template(namespace, name, image string, pullSecrets ...string) *infrav1.TerraformMachineTemplate {
	t := &infrav1.TerraformMachineTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	t.Spec.Template.Spec.Source.Image = image
	if len(pullSecrets) > 0 {
		t.Spec.Template.Spec.Jobs = &infrav1.JobPolicy{}
		for _, s := range pullSecrets {
			t.Spec.Template.Spec.Jobs.ImagePullSecrets = append(t.Spec.Template.Spec.Jobs.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
	}
	return t
}

func get(c client.Client, namespace, name string) (*infrav1.TerraformMachineTemplate, *metav1.Condition) {
	t := &infrav1.TerraformMachineTemplate{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, t); err != nil {
		return nil, nil
	}
	return t, meta.FindStatusCondition(t.Status.Conditions, infrav1.CapacityResolvedCondition)
}

func condIs(c client.Client, namespace, name string, status metav1.ConditionStatus, reason string) func() (bool, string) {
	return func() (bool, string) {
		_, cond := get(c, namespace, name)
		if cond == nil {
			return false, "no condition"
		}
		return cond.Status == status && cond.Reason == reason, string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
	}
}

func eventReasons(t *testing.T, c client.Client, namespace, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "TerraformMachineTemplate" && e.Regarding.Name == name {
			out = append(out, e.Reason)
			if strings.Contains(e.Note, regPass) {
				t.Errorf("event %s carries the registry password", e.Reason)
			}
		}
	}
	slices.Sort(out)
	return out
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// watchVersions records every version of one template from now on; the
// returned function gives the versions seen so far.
func watchVersions(t *testing.T, namespace, name string) func() []infrav1.TerraformMachineTemplate {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &infrav1.TerraformMachineTemplateList{}, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []infrav1.TerraformMachineTemplate
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if tmt, ok := ev.Object.(*infrav1.TerraformMachineTemplate); ok && tmt.Name == name {
				mu.Lock()
				seen = append(seen, *tmt)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return func() []infrav1.TerraformMachineTemplate {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// TestTemplateCapacity resolves templates against images built with
// imagebuild in an in-process registry.
func TestTemplateCapacity(t *testing.T) {
	c := startManager(t)
	ctx := context.Background()
	ns := "tmt"
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	reg := startRegistry(t, false)
	private := startRegistry(t, true)

	small := reg.push(t, "machine:small", map[string]string{
		contract.LabelCapacity: `{"cpu":"2","memory":"4Gi"}`,
		contract.LabelNodeInfo: `{"architecture":"amd64","operatingSystem":"linux"}`,
	})
	large := reg.push(t, "machine:large", map[string]string{
		contract.LabelCapacity: `{"cpu":"8","memory":"32Gi"}`,
		contract.LabelNodeInfo: `{"architecture":"amd64","operatingSystem":"linux"}`,
	})
	plain := reg.push(t, "machine:plain", nil)
	invalid := reg.push(t, "machine:invalid", map[string]string{contract.LabelCapacity: `{"cpu":"two"}`})
	privateRef := private.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"1"}`})

	t.Run("both labels: CapacityResolved, capacity, nodeInfo and capacitySource.image, with an event", func(t *testing.T) {
		versions := watchVersions(t, ns, "small")
		create(t, c, template(ns, "small", small))
		envtest.Eventually(t, 60*time.Second, "CapacityResolved", condIs(c, ns, "small", metav1.ConditionTrue, infrav1.CapacityResolvedReason))
		// No version of the template, as any watcher saw it, carries the
		// condition without the capacity it reports. The watch delivers
		// versions in order: once it has the resolved one, it has every
		// version before it.
		envtest.Eventually(t, 60*time.Second, "the watch saw the resolved version", func() (bool, string) {
			vs := versions()
			return slices.ContainsFunc(vs, func(v infrav1.TerraformMachineTemplate) bool { return v.Status.CapacitySource != nil }), fmt.Sprintf("%d versions", len(vs))
		})
		for _, v := range versions() {
			if cond := meta.FindStatusCondition(v.Status.Conditions, infrav1.CapacityResolvedCondition); cond != nil && cond.Status == metav1.ConditionTrue &&
				(v.Status.CapacitySource == nil || v.Status.Capacity == nil || v.Status.NodeInfo == nil) {
				t.Errorf("version %s has CapacityResolved=True but capacity %v, nodeInfo %v, capacitySource %v", v.ResourceVersion, v.Status.Capacity, v.Status.NodeInfo, v.Status.CapacitySource)
			}
		}
		tmt, _ := get(c, ns, "small")
		if q := tmt.Status.Capacity[corev1.ResourceMemory]; q.Cmp(resource.MustParse("4Gi")) != 0 {
			t.Errorf("memory %s", q.String())
		}
		if tmt.Status.NodeInfo == nil || tmt.Status.NodeInfo.Architecture != "amd64" || tmt.Status.NodeInfo.OperatingSystem != "linux" {
			t.Errorf("nodeInfo %+v", tmt.Status.NodeInfo)
		}
		if tmt.Status.CapacitySource == nil || tmt.Status.CapacitySource.Image != small {
			t.Errorf("capacitySource %+v", tmt.Status.CapacitySource)
		}
		envtest.Eventually(t, 60*time.Second, "CapacityResolved event", func() (bool, string) {
			r := eventReasons(t, c, ns, "small")
			return slices.Equal(r, []string{infrav1.CapacityResolvedEvent}), strings.Join(r, ",")
		})
	})

	t.Run("a new spec image is resolved again", func(t *testing.T) {
		tmt, _ := get(c, ns, "small")
		tmt.Spec.Template.Spec.Source.Image = large
		if err := c.Update(ctx, tmt); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 60*time.Second, "capacity from the new image", func() (bool, string) {
			tmt, _ := get(c, ns, "small")
			q := tmt.Status.Capacity[corev1.ResourceCPU]
			return q.Cmp(resource.MustParse("8")) == 0 && tmt.Status.CapacitySource.Image == large, q.String()
		})
		envtest.Eventually(t, 60*time.Second, "a second CapacityResolved event", func() (bool, string) {
			r := eventReasons(t, c, ns, "small")
			return len(r) == 2, strings.Join(r, ",")
		})
	})

	t.Run("an image without the labels is CapacityNotDeclared and leaves both fields unset", func(t *testing.T) {
		create(t, c, template(ns, "plain", plain))
		envtest.Eventually(t, 60*time.Second, "CapacityNotDeclared", condIs(c, ns, "plain", metav1.ConditionTrue, infrav1.CapacityNotDeclaredReason))
		tmt, _ := get(c, ns, "plain")
		if tmt.Status.Capacity != nil || tmt.Status.NodeInfo != nil {
			t.Errorf("status %+v", tmt.Status)
		}
		if r := eventReasons(t, c, ns, "plain"); len(r) != 0 {
			t.Errorf("events %v for an image that declares nothing", r)
		}
	})

	t.Run("an invalid label is CapacityLabelInvalid", func(t *testing.T) {
		create(t, c, template(ns, "invalid", invalid))
		envtest.Eventually(t, 60*time.Second, "CapacityLabelInvalid", condIs(c, ns, "invalid", metav1.ConditionFalse, infrav1.CapacityLabelInvalidReason))
	})

	t.Run("a missing image is ImageInspectFailed, retried until it appears", func(t *testing.T) {
		late := reg.host + "/machine:late"
		create(t, c, template(ns, "late", late))
		envtest.Eventually(t, 60*time.Second, "ImageInspectFailed", condIs(c, ns, "late", metav1.ConditionFalse, infrav1.ImageInspectFailedReason))
		reg.push(t, "machine:late", map[string]string{contract.LabelCapacity: `{"cpu":"4"}`})
		envtest.Eventually(t, 60*time.Second, "resolved after the push", condIs(c, ns, "late", metav1.ConditionTrue, infrav1.CapacityResolvedReason))
		// Events are written asynchronously: wait for both, then check
		// that no second ImageInspectFailed came with the retries.
		want := []string{infrav1.CapacityResolvedEvent, infrav1.ImageInspectFailedEvent}
		envtest.Eventually(t, 60*time.Second, "one ImageInspectFailed (not one per retry) then CapacityResolved", func() (bool, string) {
			r := eventReasons(t, c, ns, "late")
			return slices.Equal(r, want), strings.Join(r, ",")
		})
	})

	t.Run("a private registry needs the template's image pull Secret", func(t *testing.T) {
		create(t, c, template(ns, "private", privateRef, "pull"))
		envtest.Eventually(t, 60*time.Second, "ImageInspectFailed without credentials", condIs(c, ns, "private", metav1.ConditionFalse, infrav1.ImageInspectFailedReason))
		create(t, c, dockerConfigSecret(ns, "pull", private.host, regUser, regPass))
		envtest.Eventually(t, 60*time.Second, "resolved with the pull Secret", condIs(c, ns, "private", metav1.ConditionTrue, infrav1.CapacityResolvedReason))
		tmt, _ := get(c, ns, "private")
		for _, cond := range tmt.Status.Conditions {
			if strings.Contains(cond.Message, regPass) {
				t.Errorf("condition carries the registry password")
			}
		}
		eventReasons(t, c, ns, "private")
	})

	t.Run("a private registry's credentials on the ServiceAccount the Jobs run as", func(t *testing.T) {
		create(t, c, dockerConfigSecret(ns, "builder-pull", private.host, regUser, regPass))
		create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "builder-pull"}}})
		tmt := template(ns, "private-sa", privateRef)
		tmt.Spec.Template.Spec.Jobs = &infrav1.JobPolicy{ServiceAccountName: "builder"}
		create(t, c, tmt)
		envtest.Eventually(t, 60*time.Second, "resolved with the ServiceAccount's pull Secret", condIs(c, ns, "private-sa", metav1.ConditionTrue, infrav1.CapacityResolvedReason))
	})

	t.Run("a resolved template is not read or written again", func(t *testing.T) {
		tmt, _ := get(c, ns, "plain")
		rv := tmt.ResourceVersion
		// A label change is no new generation; an unchanged image is not
		// resolved again.
		tmt.Labels = map[string]string{"touched": "yes"}
		if err := c.Update(ctx, tmt); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		tmt, _ = get(c, ns, "plain")
		if tmt.ResourceVersion == rv {
			t.Fatalf("the label update did not land")
		}
		after := tmt.ResourceVersion
		time.Sleep(time.Second)
		tmt, _ = get(c, ns, "plain")
		if tmt.ResourceVersion != after {
			t.Errorf("status written with nothing changed: %s -> %s", after, tmt.ResourceVersion)
		}
	})
}
