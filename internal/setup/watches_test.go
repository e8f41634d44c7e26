package setup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformcluster"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachine"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachinepool"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// The kinds the recorder keys its requests by.
const (
	kindTC  = "TerraformCluster"
	kindTM  = "TerraformMachine"
	kindTMP = "TerraformMachinePool"
)

// wakeRecorder keeps, per kind, the requests the recording controllers
// reconciled, in order.
type wakeRecorder struct {
	mu   sync.Mutex
	seen map[string][]string
	last time.Time
}

func (r *wakeRecorder) add(kind string, req reconcile.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]string{}
	}
	r.seen[kind] = append(r.seen[kind], req.Name)
	r.last = time.Now()
}

func (r *wakeRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = map[string][]string{}
}

// woken returns the distinct names kind was woken for, sorted.
func (r *wakeRecorder) woken(kind string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.seen[kind])
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *wakeRecorder) quietFor() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(r.last)
}

// recordingControllers stand in for the workload controllers: each has the
// kind's own watches, exactly as its Setup wires them (Watches), but no
// watch on the object itself, one worker, and a reconciler that only
// records the request.
func recordingControllers(rec *wakeRecorder) []WorkloadController {
	wire := func(kind string, obj client.Object, watches func(ctx context.Context, mgr ctrl.Manager, w Wiring) func(*builder.Builder) *builder.Builder) WorkloadController {
		return func(ctx context.Context, mgr ctrl.Manager, w Wiring) error {
			b := ctrl.NewControllerManagedBy(mgr).
				Named("record-"+strings.ToLower(kind)).
				For(obj, builder.WithPredicates(predicate.NewPredicateFuncs(func(client.Object) bool { return false }))).
				WithOptions(controller.Options{MaxConcurrentReconciles: 1})
			return watches(ctx, mgr, w)(b).Complete(reconcile.Func(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
				rec.add(kind, req)
				return reconcile.Result{}, nil
			}))
		}
	}
	return []WorkloadController{
		wire(kindTC, &infrav1.TerraformCluster{}, func(ctx context.Context, mgr ctrl.Manager, w Wiring) func(*builder.Builder) *builder.Builder {
			return terraformcluster.Watches(ctx, mgr, sources(w))
		}),
		wire(kindTM, &infrav1.TerraformMachine{}, func(_ context.Context, mgr ctrl.Manager, w Wiring) func(*builder.Builder) *builder.Builder {
			return terraformmachine.Watches(mgr, sources(w))
		}),
		wire(kindTMP, &infrav1.TerraformMachinePool{}, func(_ context.Context, mgr ctrl.Manager, w Wiring) func(*builder.Builder) *builder.Builder {
			return terraformmachinepool.Watches(mgr, sources(w))
		}),
	}
}

// wakeFixture builds the objects of one namespace for the wake tests.
type wakeFixture struct {
	t  *testing.T
	c  client.Client
	ns string
}

func (f wakeFixture) create(objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		o.SetNamespace(f.ns)
		create(f.t, f.c, o)
	}
}

// workspace fills the spec fields every workload kind needs, and the
// variablesFrom sources named configMaps and secrets.
func workspace(ws *infrav1.WorkspaceSpec, configMaps, secrets []string) {
	ws.Source.Image = "registry.example/captf/noop:v1"
	for _, n := range configMaps {
		ws.VariablesFrom = append(ws.VariablesFrom, infrav1.VariablesSource{ConfigMapRef: &infrav1.LocalObjectReference{Name: n}})
	}
	for _, n := range secrets {
		ws.VariablesFrom = append(ws.VariablesFrom, infrav1.VariablesSource{SecretRef: &infrav1.LocalObjectReference{Name: n}})
	}
}

func identityRef(name string) *infrav1.IdentityReference {
	if name == "" {
		return nil
	}
	return &infrav1.IdentityReference{Name: name}
}

func wakeCluster(name, identity, passDown string, configMaps, secrets []string) *infrav1.TerraformCluster {
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	workspace(&tc.Spec.WorkspaceSpec, configMaps, secrets)
	tc.Spec.IdentityRef = identityRef(identity)
	if passDown != "" {
		tc.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: identityRef(passDown)}
	}
	return tc
}

func wakeMachine(name, cluster, identity string, configMaps, secrets []string) *infrav1.TerraformMachine {
	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}}}
	workspace(&tm.Spec.WorkspaceSpec, configMaps, secrets)
	tm.Spec.IdentityRef = identityRef(identity)
	return tm
}

func wakePool(name, cluster, identity string, configMaps, secrets []string) *infrav1.TerraformMachinePool {
	tmp := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}}}
	workspace(&tmp.Spec.WorkspaceSpec, configMaps, secrets)
	tmp.Spec.IdentityRef = identityRef(identity)
	return tmp
}

// capiCluster is a Cluster API Cluster whose spec.infrastructureRef names
// the TerraformCluster tc.
func capiCluster(name, tc string) *clusterv1.Cluster {
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformCluster", Name: tc}
	return cl
}

func variablesLabel() map[string]string { return map[string]string{infrav1.VariablesLabel: "true"} }

func configMap(name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Data: map[string]string{"instance_type": "small"}}
}

func wakeIdentity(name string, namespaces ...string) *infrav1.TerraformClusterIdentity {
	return &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Name: name, Namespace: "captf-system"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: namespaces},
		},
	}
}

// TestManagerWakesUsersOfVariablesSourcesAndIdentities runs the manager
// New builds (its label-selected variables cache, its field indexes) with
// recording controllers wired with each workload kind's own watches, and
// checks which objects a change wakes (Module Variables, "What a change
// does per kind"; Identities and Credentials, "Point the identity at a
// different Secret", "Revoke access").
//
// Each round changes one object, then touches a sentinel of the same
// informer that wakes one sentinel object per kind. Events of one informer
// reach the handlers in order, the handlers enqueue synchronously and each
// recording controller has one worker, so once every sentinel object was
// reconciled, every request the change made was reconciled before it: what
// the round did not record, the change did not wake.
func TestManagerWakesUsersOfVariablesSourcesAndIdentities(t *testing.T) {
	rec := &wakeRecorder{}
	saved := WorkloadControllers
	WorkloadControllers = recordingControllers(rec)
	t.Cleanup(func() { WorkloadControllers = saved })

	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const tenant = "wakes"
	create(t, c, ns("captf-system"), ns(tenant))
	f := wakeFixture{t: t, c: c, ns: tenant}
	const shared, other, sentinelID = "wakes-shared", "wakes-other", "wakes-sentinel"
	create(t, c, wakeIdentity(shared, tenant), wakeIdentity(other, tenant), wakeIdentity(sentinelID, tenant))

	// Sources: the "a" objects use the ConfigMap sizing and the Secret db;
	// tc-c uses a ConfigMap also named db; late is not labeled yet.
	f.create(
		configMap("sizing", variablesLabel()), configMap("other", variablesLabel()), configMap("db", variablesLabel()),
		configMap("late", nil), configMap("sentinel", variablesLabel()),
		secret(tenant, "db", variablesLabel()), secret(tenant, "other", variablesLabel()), secret(tenant, "sentinel", variablesLabel()),
	)
	sentinels := map[string]string{kindTC: "tc-s", kindTM: "tm-s", kindTMP: "tmp-s"}
	sentinelSources := []string{"sentinel"}
	f.create(
		wakeCluster("tc-a", other, "", []string{"sizing"}, []string{"db"}),
		wakeCluster("tc-b", other, "", []string{"other"}, []string{"other"}),
		wakeCluster("tc-c", other, "", []string{"db"}, nil),
		wakeCluster("tc-late", other, "", []string{"late"}, nil),
		wakeCluster("tc-own", shared, "", nil, nil),
		wakeCluster("tc-defaults", other, shared, nil, nil),
		wakeCluster("tc-s", sentinelID, "", sentinelSources, sentinelSources),
		capiCluster("cl-own", "tc-own"),
		capiCluster("cl-other", "tc-b"),
		capiCluster("cl-defaults", "tc-defaults"),
		wakeMachine("tm-a", "cl-other", "", []string{"sizing"}, []string{"db"}),
		wakeMachine("tm-provisioned", "cl-other", "", []string{"sizing"}, []string{"db"}),
		wakeMachine("tm-inherit", "cl-own", "", nil, nil),
		wakeMachine("tm-own-other", "cl-own", other, nil, nil),
		wakeMachine("tm-own", "cl-other", shared, nil, nil),
		wakeMachine("tm-inherit-other", "cl-other", "", nil, nil),
		wakeMachine("tm-inherit-defaults", "cl-defaults", "", nil, nil),
		wakeMachine("tm-s", "cl-none", sentinelID, sentinelSources, sentinelSources),
		wakePool("tmp-a", "cl-other", "", []string{"sizing"}, []string{"db"}),
		wakePool("tmp-inherit", "cl-own", "", nil, nil),
		wakePool("tmp-inherit-defaults", "cl-defaults", "", nil, nil),
		wakePool("tmp-other", "cl-other", "", nil, nil),
		wakePool("tmp-s", "cl-none", sentinelID, sentinelSources, sentinelSources),
	)
	provisioned := &infrav1.TerraformMachine{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "tm-provisioned"}, provisioned))
	provisioned.Status.Initialization = &infrav1.Initialization{Provisioned: ptr.To(true)}
	must(t, c.Status().Update(ctx, provisioned))

	o := testOptions(t)
	// No resync during the test: a resync replays every object to the
	// handlers.
	o.SyncPeriod = 10 * time.Minute
	run(t, o)
	// Let the events of the objects' creation (a Cluster wakes its
	// TerraformCluster, ...) go by.
	envtest.Eventually(t, 60*time.Second, "the creations to settle", func() (bool, string) {
		return len(rec.woken(kindTC)) > 0 && rec.quietFor() > 2*time.Second, fmt.Sprint(rec.quietFor())
	})

	n := 0
	// update and updateStatus retry on a conflict: the
	// TerraformClusterIdentity controller writes the identities' status.
	update := func(obj client.Object, mutate func()) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			mutate()
			return c.Update(ctx, obj)
		}))
	}
	updateStatus := func(obj client.Object, mutate func()) {
		t.Helper()
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			mutate()
			return c.Status().Update(ctx, obj)
		}))
	}
	touchConfigMap := func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "sentinel"}}
		update(cm, func() { n++; cm.Data = map[string]string{"n": fmt.Sprint(n)} })
	}
	touchSecret := func() {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "sentinel"}}
		update(s, func() { n++; s.Data = map[string][]byte{"n": []byte(fmt.Sprint(n))} })
	}
	touchIdentity := func() {
		id := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: sentinelID}}
		update(id, func() { n++; id.Spec.AllowedNamespaces.List = []string{tenant, fmt.Sprintf("n%d", n)} })
	}
	// round flushes what earlier rounds left queued, makes the change,
	// touches the sentinel and returns, per kind, what the change woke.
	round := func(t *testing.T, touch, change func()) map[string][]string {
		t.Helper()
		waitSentinels := func() {
			envtest.Eventually(t, 60*time.Second, "every sentinel woken", func() (bool, string) {
				for kind, name := range sentinels {
					if !slices.Contains(rec.woken(kind), name) {
						return false, kind + " " + name
					}
				}
				return true, ""
			})
		}
		rec.reset()
		touch()
		waitSentinels()
		rec.reset()
		change()
		touch()
		waitSentinels()
		out := map[string][]string{}
		for kind, name := range sentinels {
			out[kind] = slices.DeleteFunc(rec.woken(kind), func(s string) bool { return s == name })
		}
		return out
	}
	expect := func(t *testing.T, got map[string][]string, tc, tm, tmp []string) {
		t.Helper()
		for kind, want := range map[string][]string{kindTC: tc, kindTM: tm, kindTMP: tmp} {
			if !slices.Equal(got[kind], want) {
				t.Errorf("%s woken: %v, want %v", kind, got[kind], want)
			}
		}
	}
	cmData := func(name string) func() {
		return func() {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name}}
			update(cm, func() { cm.Data = map[string]string{"instance_type": "large-" + fmt.Sprint(n)} })
		}
	}

	t.Run("a changed ConfigMap wakes the objects naming it in variablesFrom, a machine only until provisioned", func(t *testing.T) {
		got := round(t, touchConfigMap, cmData("sizing"))
		expect(t, got, []string{"tc-a"}, []string{"tm-a"}, []string{"tmp-a"})
	})

	t.Run("a ConfigMap wakes only the objects naming a ConfigMap of its name, not a Secret", func(t *testing.T) {
		got := round(t, touchConfigMap, cmData("db"))
		expect(t, got, []string{"tc-c"}, nil, nil)
	})

	t.Run("a changed Secret wakes the objects naming it in variablesFrom", func(t *testing.T) {
		got := round(t, touchSecret, func() {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "db"}}
			update(s, func() { s.Data = map[string][]byte{"password": []byte("rotated")} })
		})
		expect(t, got, []string{"tc-a"}, []string{"tm-a"}, []string{"tmp-a"})
	})

	t.Run("labeling a source captf.io/variables=true wakes its users, and so does taking the label off", func(t *testing.T) {
		late := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "late"}}
		got := round(t, touchConfigMap, func() { update(late, func() { late.Labels = variablesLabel() }) })
		expect(t, got, []string{"tc-late"}, nil, nil)
		got = round(t, touchConfigMap, func() { update(late, func() { late.Labels = nil }) })
		expect(t, got, []string{"tc-late"}, nil, nil)
	})

	// Every object that resolves to the identity shared: the cluster naming
	// it, a machine naming it, and the machines and pools without an
	// identityRef whose cluster passes it down, through its own identityRef
	// (cl-own) or its spec.defaults.identityRef (cl-defaults).
	usersTC := []string{"tc-own"}
	usersTM := []string{"tm-inherit", "tm-inherit-defaults", "tm-own"}
	usersTMP := []string{"tmp-inherit", "tmp-inherit-defaults"}
	sharedID := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: shared}}

	t.Run("changing an identity's allowedNamespaces wakes every cluster, machine and pool using it", func(t *testing.T) {
		got := round(t, touchIdentity, func() {
			update(sharedID, func() { sharedID.Spec.AllowedNamespaces.List = []string{tenant, "another"} })
		})
		expect(t, got, usersTC, usersTM, usersTMP)
	})

	t.Run("changing an identity's secretRef wakes every cluster, machine and pool using it", func(t *testing.T) {
		got := round(t, touchIdentity, func() {
			update(sharedID, func() { sharedID.Spec.SecretRef.Name = "rotated" })
		})
		expect(t, got, usersTC, usersTM, usersTMP)
	})

	t.Run("an identity's status.namespaces alone wakes nothing", func(t *testing.T) {
		got := round(t, touchIdentity, func() {
			updateStatus(sharedID, func() { sharedID.Status.Namespaces = append(sharedID.Status.Namespaces, "elsewhere") })
		})
		expect(t, got, nil, nil, nil)
	})

	t.Run("an identity's Ready condition changing (its Secret found or gone) wakes every object using it", func(t *testing.T) {
		got := round(t, touchIdentity, func() {
			updateStatus(sharedID, func() {
				meta.SetStatusCondition(&sharedID.Status.Conditions, metav1.Condition{
					Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: infrav1.SecretFoundReason, Message: "set by the test",
				})
			})
		})
		expect(t, got, usersTC, usersTM, usersTMP)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
