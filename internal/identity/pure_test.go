package identity

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func ref(name string) *infrav1.IdentityReference { return &infrav1.IdentityReference{Name: name} }

func tc(name string, own, defaults *infrav1.IdentityReference) *infrav1.TerraformCluster {
	c := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	c.Spec.IdentityRef = own
	if defaults != nil {
		c.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: defaults}
	}
	return c
}

func TestIdentityRefFor(t *testing.T) {
	m := func(own *infrav1.IdentityReference) *infrav1.TerraformMachine {
		return &infrav1.TerraformMachine{Spec: infrav1.TerraformMachineSpec{IdentityRef: own}}
	}
	p := func(own *infrav1.IdentityReference) *infrav1.TerraformMachinePool {
		return &infrav1.TerraformMachinePool{Spec: infrav1.TerraformMachinePoolSpec{IdentityRef: own}}
	}
	cases := []struct {
		name    string
		obj     client.Object
		cluster *infrav1.TerraformCluster
		want    string
		src     RefSource
	}{
		{"a cluster uses its own spec.identityRef", tc("c", ref("own"), ref("dflt")), nil, "own", RefOwn},
		{"a cluster's spec.defaults never apply to the cluster itself", tc("c", nil, ref("dflt")), nil, "", RefNone},
		{"a machine uses its own identityRef when it sets one", m(ref("mine")), tc("c", ref("cl"), ref("dflt")), "mine", RefOwn},
		{"else the cluster's spec.defaults.identityRef", m(nil), tc("c", ref("cl"), ref("dflt")), "dflt", RefClusterDefaults},
		{"else the cluster's own spec.identityRef", m(nil), tc("c", ref("cl"), nil), "cl", RefCluster},
		{"a pool falls back the same way as a machine", p(nil), tc("c", ref("cl"), ref("dflt")), "dflt", RefClusterDefaults},
		{"a pool's own identityRef wins", p(ref("mine")), tc("c", ref("cl"), nil), "mine", RefOwn},
		{"a machine with no identityRef and no resolved cluster resolves to nothing", m(nil), nil, "", RefNone},
		{"an empty identityRef name counts as unset", m(ref("")), tc("c", ref("cl"), nil), "cl", RefCluster},
		{"another kind resolves to nothing", &corev1.Secret{}, tc("c", ref("cl"), nil), "", RefNone},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, src := IdentityRefFor(tt.obj, tt.cluster)
			if got != tt.want || src != tt.src {
				t.Fatalf("got %q (%s), want %q (%s)", got, src, tt.want, tt.src)
			}
		})
	}
}

func TestNamespaceAllowed(t *testing.T) {
	sel := func(s *metav1.LabelSelector) *infrav1.AllowedNamespaces {
		return &infrav1.AllowedNamespaces{Selector: s}
	}
	cases := []struct {
		name    string
		allowed *infrav1.AllowedNamespaces
		ns      string
		labels  map[string]string
		want    bool
		wantErr bool
	}{
		{"unset allowedNamespaces allows none", nil, "tenant", nil, false, false},
		{"list names the namespace", &infrav1.AllowedNamespaces{List: []string{"a", "tenant"}}, "tenant", nil, true, false},
		{"list without the namespace and no selector", &infrav1.AllowedNamespaces{List: []string{"a"}}, "tenant", nil, false, false},
		{"selector: {} allows every namespace", sel(&metav1.LabelSelector{}), "anything", nil, true, false},
		{"selector matches the namespace's labels", sel(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}), "tenant", map[string]string{"team": "x"}, true, false},
		{"selector does not match", sel(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}), "tenant", map[string]string{"team": "y"}, false, false},
		{"list and selector are ORed: list matches", &infrav1.AllowedNamespaces{List: []string{"tenant"}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}}, "tenant", nil, true, false},
		{"list and selector are ORed: selector matches", &infrav1.AllowedNamespaces{List: []string{"other"}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}}, "tenant", map[string]string{"team": "x"}, true, false},
		{"neither list nor selector allows none", &infrav1.AllowedNamespaces{}, "tenant", nil, false, false},
		{"an invalid selector allows none and says why", sel(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}), "tenant", nil, false, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NamespaceAllowed(tt.allowed, tt.ns, tt.labels)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestAccessCondition(t *testing.T) {
	ok := AccessFacts{Namespace: "tenant", Identity: "id", IdentityFound: true, NamespaceAllowed: true, SecretRef: "creds/id", SecretFound: true}
	with := func(mut func(*AccessFacts)) AccessFacts { f := ok; mut(&f); return f }
	cases := []struct {
		name   string
		facts  AccessFacts
		status metav1.ConditionStatus
		reason string
	}{
		{"resolved identity may be used from this namespace: True/IdentityAllowed", ok, metav1.ConditionTrue, infrav1.IdentityAllowedReason},
		{"no identityRef (own or inherited): False/IdentityNotFound", with(func(f *AccessFacts) { f.Identity = "" }), metav1.ConditionFalse, infrav1.IdentityNotFoundReason},
		{"no identityRef and cluster not resolved: False/IdentityNotFound", with(func(f *AccessFacts) { f.Identity = ""; f.ClusterUnresolved = true }), metav1.ConditionFalse, infrav1.IdentityNotFoundReason},
		{"the named TCI does not exist: False/IdentityNotFound", with(func(f *AccessFacts) { f.IdentityFound = false }), metav1.ConditionFalse, infrav1.IdentityNotFoundReason},
		{"allowedNamespaces excludes this namespace: False/NamespaceNotAllowed", with(func(f *AccessFacts) { f.NamespaceAllowed = false; f.SecretFound = false }), metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
		{"an unparsable selector allows nothing: False/NamespaceNotAllowed", with(func(f *AccessFacts) { f.NamespaceAllowed = false; f.SelectorError = errors.New("bad") }), metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
		{"identity's secretRef Secret missing: False/SecretNotFound", with(func(f *AccessFacts) { f.SecretFound = false }), metav1.ConditionFalse, infrav1.SecretNotFoundReason},
		{"transient error during the check: Unknown/IdentityCheckFailed", with(func(f *AccessFacts) { f.CheckError = errors.New("timeout") }), metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason},
		{"the namespace is checked before the Secret", with(func(f *AccessFacts) { f.NamespaceAllowed = false; f.SecretFound = false }), metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := AccessVerdict(tt.facts)
			if c.Status != tt.status || c.Reason != tt.reason || c.Message == "" {
				t.Fatalf("got %+v, want %s/%s", c, tt.status, tt.reason)
			}
		})
	}
}

func TestAccessEventsAndDeniedCounter(t *testing.T) {
	notAllowed := AccessVerdict(AccessFacts{Namespace: "tenant", Identity: "id", IdentityFound: true})
	notFound := AccessVerdict(AccessFacts{Namespace: "tenant", Identity: "id"})
	allowed := AccessVerdict(AccessFacts{Namespace: "tenant", Identity: "id", IdentityFound: true, NamespaceAllowed: true, SecretFound: true})
	secretMissing := AccessVerdict(AccessFacts{Namespace: "tenant", Identity: "id", IdentityFound: true, NamespaceAllowed: true})
	was := func(v Verdict) *metav1.Condition {
		return &metav1.Condition{Type: infrav1.IdentityAllowedCondition, Status: v.Status, Reason: v.Reason, Message: v.Message}
	}
	cases := []struct {
		name   string
		prev   *metav1.Condition
		next   Verdict
		events int
		denied string
	}{
		{"IdentityNotAllowed event once on entering NamespaceNotAllowed", was(allowed), notAllowed, 1, DeniedNamespace},
		{"first reconcile into NamespaceNotAllowed counts too", nil, notAllowed, 1, DeniedNamespace},
		{"at most once per transition: staying NamespaceNotAllowed emits nothing", was(notAllowed), notAllowed, 0, ""},
		{"captf_identity_denied_total reason notfound on entering IdentityNotFound", was(allowed), notFound, 0, DeniedNotFound},
		{"staying IdentityNotFound counts nothing", was(notFound), notFound, 0, ""},
		{"SecretNotFound is neither notfound nor namespace", was(allowed), secretMissing, 0, ""},
		{"becoming allowed counts nothing", was(notAllowed), allowed, 0, ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			ev := AccessEvents(tt.prev, tt.next)
			if len(ev) != tt.events {
				t.Fatalf("events %v, want %d", ev, tt.events)
			}
			if tt.events == 1 && (ev[0].Reason != infrav1.IdentityNotAllowedEvent || ev[0].Type != corev1.EventTypeWarning) {
				t.Fatalf("event %+v", ev[0])
			}
			if got := DeniedTransition(tt.prev, tt.next); got != tt.denied {
				t.Fatalf("denied %q, want %q", got, tt.denied)
			}
		})
	}
}

func TestMirrorName(t *testing.T) {
	long := strings.Repeat("a", 240) + ".b" + strings.Repeat("c", 11)
	cases := []struct {
		name     string
		identity string
		want     string
	}{
		{"captf-creds-<identity>", "aws-prod", "captf-creds-aws-prod"},
		{"exactly 253 characters is kept", strings.Repeat("x", 241), "captf-creds-" + strings.Repeat("x", 241)},
		{"names over 253 chars become prefix + hash", strings.Repeat("x", 242), ""},
		{"a cut before a dot or dash still gives a DNS subdomain", long, ""},
		{"a cut right after a dot still gives a DNS subdomain", strings.Repeat("a", 223) + "." + strings.Repeat("b", 40), ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := MirrorName(tt.identity)
			if tt.want != "" && got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if len(got) > 253 {
				t.Fatalf("%d characters", len(got))
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Fatalf("%q: %v", got, errs)
			}
			if MirrorName(tt.identity) != got {
				t.Fatal("not deterministic")
			}
		})
	}
	a, b := MirrorName(strings.Repeat("x", 242)), MirrorName(strings.Repeat("x", 243))
	if a == b {
		t.Fatalf("two long identities share mirror name %q", a)
	}
	if !regexp.MustCompile(`^captf-creds-x+-[0-9a-f]{16}$`).MatchString(a) {
		t.Fatalf("hashed name %q", a)
	}
}

func TestSourceHash(t *testing.T) {
	base := map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("AKIA"), "AWS_SECRET_ACCESS_KEY": []byte("s3cr3t")}
	h := SourceHash(base)
	if !strings.HasPrefix(h, SourceHashPrefix) || len(h) != len(SourceHashPrefix)+64 {
		t.Fatalf("hash %q", h)
	}
	cases := []struct {
		name string
		data map[string][]byte
		same bool
	}{
		{"same data in any map order hashes alike (canonical order)", map[string][]byte{"AWS_SECRET_ACCESS_KEY": []byte("s3cr3t"), "AWS_ACCESS_KEY_ID": []byte("AKIA")}, true},
		{"a rotated value changes the hash", map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("AKIA"), "AWS_SECRET_ACCESS_KEY": []byte("n3w")}, false},
		{"a renamed key changes the hash", map[string][]byte{"AWS_ACCESS_KEY": []byte("AKIA"), "AWS_SECRET_ACCESS_KEY": []byte("s3cr3t")}, false},
		{"an added key changes the hash", map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("AKIA"), "AWS_SECRET_ACCESS_KEY": []byte("s3cr3t"), "X": nil}, false},
		{"moving bytes between key and value changes the hash", map[string][]byte{"AWS_ACCESS_KEY_IDA": []byte("KIA"), "AWS_SECRET_ACCESS_KEY": []byte("s3cr3t")}, false},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := SourceHash(tt.data) == h; got != tt.same {
				t.Fatalf("same=%v, want %v", got, tt.same)
			}
		})
	}
	if strings.Contains(h, "s3cr3t") || strings.Contains(h, "AKIA") {
		t.Fatal("hash carries a value")
	}
	if SourceHash(nil) != SourceHash(map[string][]byte{}) {
		t.Fatal("nil and empty data differ")
	}
}

func TestPlanMirror(t *testing.T) {
	data := map[string][]byte{"K": []byte("v")}
	hash := SourceHash(data)
	owner := metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformCluster), Name: "c", UID: "u1"}
	mirror := func(mut func(s *corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: MirrorName("id"), Labels: MirrorLabels(),
				Annotations:     map[string]string{infrav1.IdentityAnnotation: "id", infrav1.SourceHashAnnotation: hash},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Type: corev1.SecretTypeOpaque,
			Data: copyData(data),
		}
		if mut != nil {
			mut(s)
		}
		return s
	}
	now := metav1.Now()
	cases := []struct {
		name string
		s    *corev1.Secret
		want MirrorPlan
	}{
		{"first use in the namespace creates the mirror", nil, MirrorPlan{Action: MirrorCreate, Rewrite: true, Relabel: true, AddOwner: true}},
		{"a current mirror with this owner needs nothing", mirror(nil), MirrorPlan{Action: MirrorInPlace}},
		{"rewritten when the source hash changes", mirror(func(s *corev1.Secret) { s.Annotations[infrav1.SourceHashAnnotation] = "sha256:old" }), MirrorPlan{Action: MirrorUpdate, Rewrite: true}},
		{"rewritten when the mirror's own data was edited", mirror(func(s *corev1.Secret) { s.Data["K"] = []byte("edited") }), MirrorPlan{Action: MirrorUpdate, Rewrite: true}},
		{"an owner reference for every object that uses it", mirror(func(s *corev1.Secret) { s.OwnerReferences[0].UID = "other" }), MirrorPlan{Action: MirrorUpdate, AddOwner: true}},
		{"a lost managed label is put back", mirror(func(s *corev1.Secret) { delete(s.Labels, infrav1.ManagedLabel) }), MirrorPlan{Action: MirrorUpdate, Relabel: true}},
		{"a lost move label is put back", mirror(func(s *corev1.Secret) { delete(s.Labels, infrav1.MoveLabel) }), MirrorPlan{Action: MirrorUpdate, Relabel: true}},
		{"no captf.io/mirrored label: never overwritten", mirror(func(s *corev1.Secret) { delete(s.Labels, infrav1.MirroredLabel) }), MirrorPlan{Action: MirrorForeign}},
		{"captf.io/mirrored not true: never overwritten", mirror(func(s *corev1.Secret) { s.Labels[infrav1.MirroredLabel] = "false" }), MirrorPlan{Action: MirrorForeign}},
		{"a different captf.io/identity: never overwritten", mirror(func(s *corev1.Secret) { s.Annotations[infrav1.IdentityAnnotation] = "other" }), MirrorPlan{Action: MirrorForeign}},
		{"a user's Secret of that name: never overwritten", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: MirrorName("id")}}, MirrorPlan{Action: MirrorForeign}},
		{"a mirror being deleted is waited for", mirror(func(s *corev1.Secret) { s.DeletionTimestamp = &now }), MirrorPlan{Action: MirrorTerminating}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanMirror(tt.s, "id", hash, owner); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUpsertOwner(t *testing.T) {
	gv := infrav1.GroupVersion.String()
	a := metav1.OwnerReference{APIVersion: gv, Kind: string(infrav1.KindTerraformMachine), Name: "m1", UID: "a"}
	b := metav1.OwnerReference{APIVersion: gv, Kind: string(infrav1.KindTerraformMachine), Name: "m2", UID: "b"}
	aNew := metav1.OwnerReference{APIVersion: gv, Kind: string(infrav1.KindTerraformMachine), Name: "m1", UID: "a2"}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "m1", UID: "c"}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		add  metav1.OwnerReference
		want []types.UID
	}{
		{"added to an empty list", nil, a, []types.UID{"a"}},
		{"added next to other owners", []metav1.OwnerReference{b}, a, []types.UID{"b", "a"}},
		{"never duplicated", []metav1.OwnerReference{a, b}, a, []types.UID{"a", "b"}},
		{"an earlier object of the same kind and name is replaced", []metav1.OwnerReference{a, b}, aNew, []types.UID{"a2", "b"}},
		{"the same name of another kind is kept", []metav1.OwnerReference{other}, a, []types.UID{"c", "a"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := upsertOwner(tt.refs, tt.add)
			var uids []types.UID
			for _, r := range got {
				uids = append(uids, r.UID)
			}
			if fmt.Sprint(uids) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", uids, tt.want)
			}
		})
	}
}

func jobsSA(name string) *infrav1.JobPolicy { return &infrav1.JobPolicy{ServiceAccountName: name} }

// workloads builds a namespace: TerraformClusters, Cluster API Clusters
// pointing at them (cluster name = TerraformCluster name), and machines
// labeled with a cluster name.
type wl struct{ w Workloads }

func (b *wl) cluster(name, defaultSA, ownSA string) *wl {
	c := infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if defaultSA != "" {
		c.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: jobsSA(defaultSA)}
	}
	if ownSA != "" {
		c.Spec.Jobs = jobsSA(ownSA)
	}
	b.w.Clusters = append(b.w.Clusters, c)
	cl := clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: string(infrav1.KindTerraformCluster), Name: name}
	b.w.CAPIClusters = append(b.w.CAPIClusters, cl)
	return b
}

func (b *wl) machine(name, clusterName, ownSA string) *wl {
	m := infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if clusterName != "" {
		m.Labels = map[string]string{clusterv1.ClusterNameLabel: clusterName}
	}
	if ownSA != "" {
		m.Spec.Jobs = jobsSA(ownSA)
	}
	b.w.Members = append(b.w.Members, &m)
	return b
}

func (b *wl) pool(name, clusterName, ownSA string) *wl {
	p := infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if clusterName != "" {
		p.Labels = map[string]string{clusterv1.ClusterNameLabel: clusterName}
	}
	if ownSA != "" {
		p.Spec.Jobs = jobsSA(ownSA)
	}
	b.w.Members = append(b.w.Members, &p)
	return b
}

func TestServiceAccountFor(t *testing.T) {
	c := tc("c", nil, nil)
	c.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: jobsSA("dflt")}
	own := tc("c", nil, nil)
	own.Spec.Jobs = jobsSA("cluster-own")
	cases := []struct {
		name    string
		obj     client.Object
		cluster *infrav1.TerraformCluster
		want    string
	}{
		{"left unset, the controller uses captf-runner", tc("c", nil, nil), nil, RunnerName},
		{"a cluster's own spec.jobs.serviceAccountName", own, nil, "cluster-own"},
		{"a cluster never inherits its own spec.defaults.jobs", c, nil, RunnerName},
		{"a machine's own spec.jobs.serviceAccountName wins", &infrav1.TerraformMachine{Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Jobs: jobsSA("m")}}}, c, "m"},
		{"else the cluster's spec.defaults.jobs.serviceAccountName", &infrav1.TerraformMachine{}, c, "dflt"},
		{"a pool inherits the same way", &infrav1.TerraformMachinePool{}, c, "dflt"},
		{"else captf-runner", &infrav1.TerraformMachinePool{}, tc("c", nil, nil), RunnerName},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServiceAccountFor(tt.obj, tt.cluster); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunnerServiceAccounts(t *testing.T) {
	cases := []struct {
		name string
		w    *wl
		want []string
	}{
		{"an empty namespace binds nothing", &wl{}, []string{}},
		{"a cluster with no override uses captf-runner", (&wl{}).cluster("c", "", ""), []string{RunnerName}},
		{"the union of the SAs objects in the namespace use", (&wl{}).cluster("c", "dflt", "cl-sa").machine("m1", "c", "").machine("m2", "c", "m-sa").pool("p", "c", ""), []string{"cl-sa", "dflt", "m-sa"}},
		{"a machine inherits captf-runner when its cluster sets no default", (&wl{}).cluster("c", "", "cl-sa").machine("m1", "c", ""), []string{RunnerName, "cl-sa"}},
		{"if a cluster cannot be resolved yet, every cluster default in the namespace is kept", (&wl{}).cluster("a", "a-sa", "x").cluster("b", "b-sa", "x").machine("m", "gone", ""), []string{"a-sa", "b-sa", RunnerName, "x"}},
		{"a machine with no cluster label cannot be resolved either", (&wl{}).cluster("a", "a-sa", "x").pool("p", "", ""), []string{"a-sa", RunnerName, "x"}},
		{"a machine's own SA needs no cluster", (&wl{}).cluster("a", "a-sa", "x").machine("m", "gone", "mine"), []string{"mine", "x"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := RunnerServiceAccounts(&tt.w.w)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClusterForFollowsTheInfrastructureRef(t *testing.T) {
	b := (&wl{}).cluster("c", "", "").machine("m", "c", "")
	// A Cluster whose infrastructureRef names something else.
	other := clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
	other.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: "c"}
	b.w.CAPIClusters = append(b.w.CAPIClusters, other)
	b.machine("mx", "x", "")
	if got := b.w.ClusterFor(b.w.Members[0]); got == nil || got.Name != "c" {
		t.Fatalf("machine of cluster c: %v", got)
	}
	if got := b.w.ClusterFor(b.w.Members[1]); got != nil {
		t.Fatalf("a Cluster not pointing at a TerraformCluster resolved to %v", got.Name)
	}
	if got := b.w.ClusterFor(&b.w.Clusters[0]); got != nil {
		t.Fatal("a cluster has no cluster of its own")
	}
}

func TestUsersOf(t *testing.T) {
	b := (&wl{}).cluster("c", "", "").machine("m-inherits", "c", "").machine("m-own", "c", "").pool("p-unresolved", "gone", "")
	b.w.Clusters[0].Spec.IdentityRef = ref("id")
	b.w.Members[1].(*infrav1.TerraformMachine).Spec.IdentityRef = ref("other")
	now := metav1.Now()
	b.w.Members[0].SetDeletionTimestamp(&now)
	got := b.w.UsersOf("id")
	want := []ObjectRef{{infrav1.KindTerraformCluster, "ns", "c"}, {infrav1.KindTerraformMachine, "ns", "m-inherits"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("an object being deleted still counts: got %v, want %v", got, want)
	}
	if got := b.w.UsersOf("other"); len(got) != 1 || got[0].Name != "m-own" {
		t.Fatalf("own identityRef: %v", got)
	}
}

func TestOptInStateAndRBACCondition(t *testing.T) {
	labeled := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{infrav1.RunnerLabel: "true"}}}
	unlabeled := &corev1.ServiceAccount{}
	wrong := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{infrav1.RunnerLabel: "yes"}}}
	cases := []struct {
		name   string
		sa     string
		obj    *corev1.ServiceAccount
		facts  func(*RBACFacts)
		status metav1.ConditionStatus
		reason string
	}{
		{"runner SA and captf-runner RoleBinding in place: True/RBACReady", RunnerName, nil, nil, metav1.ConditionTrue, infrav1.RBACReadyReason},
		{"an opted-in override: True/RBACReady", "custom", labeled, nil, metav1.ConditionTrue, infrav1.RBACReadyReason},
		{"override SA missing: False/ServiceAccountNotOptedIn", "custom", nil, nil, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason},
		{"override SA lacks captf.io/runner=true: False/ServiceAccountNotOptedIn", "custom", unlabeled, nil, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason},
		{"captf.io/runner must be exactly true", "custom", wrong, nil, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason},
		{"a name that cannot name a ServiceAccount: False/ServiceAccountNotOptedIn, even with an object", "Bad_Name", labeled, nil, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason},
		{"a foreign captf-runner RoleBinding: False/RBACFailed", RunnerName, nil, func(f *RBACFacts) { f.ForeignRoleBinding = true }, metav1.ConditionFalse, infrav1.RBACFailedReason},
		{"create/update failed: False/RBACFailed", RunnerName, nil, func(f *RBACFacts) { f.Error = errors.New("forbidden") }, metav1.ConditionFalse, infrav1.RBACFailedReason},
		{"the object's own opt-in is reported before a foreign binding", "custom", nil, func(f *RBACFacts) { f.ForeignRoleBinding = true }, metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			f := RBACFacts{ServiceAccount: tt.sa, ServiceAccountState: OptInState(tt.sa, tt.obj)}
			if tt.facts != nil {
				tt.facts(&f)
			}
			c := RBACVerdict(f)
			if c.Status != tt.status || c.Reason != tt.reason || c.Message == "" {
				t.Fatalf("got %+v, want %s/%s", c, tt.status, tt.reason)
			}
		})
	}
}

func TestPlanRoleBinding(t *testing.T) {
	subjects := RunnerSubjects("ns", []string{"b", RunnerName, "b"})
	if len(subjects) != 2 || subjects[0].Name != "b" || subjects[1].Name != RunnerName || subjects[0].Namespace != "ns" || subjects[0].Kind != rbacv1.ServiceAccountKind {
		t.Fatalf("subjects %+v", subjects)
	}
	rb := func(mut func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
		r := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: RunnerName, Labels: map[string]string{infrav1.ManagedLabel: "true"}},
			RoleRef:    RunnerRoleRef(),
			Subjects:   append([]rbacv1.Subject(nil), subjects...),
		}
		if mut != nil {
			mut(r)
		}
		return r
	}
	cases := []struct {
		name string
		rb   *rbacv1.RoleBinding
		want RoleBindingAction
	}{
		{"missing: created", nil, RoleBindingCreate},
		{"managed and current: nothing written", rb(nil), RoleBindingInPlace},
		{"subjects in another order are the same set", rb(func(r *rbacv1.RoleBinding) { r.Subjects[0], r.Subjects[1] = r.Subjects[1], r.Subjects[0] }), RoleBindingInPlace},
		{"subjects are recomputed: a changed set is updated", rb(func(r *rbacv1.RoleBinding) { r.Subjects = r.Subjects[:1] }), RoleBindingUpdate},
		{"a managed binding whose roleRef changed is re-created, not patched", rb(func(r *rbacv1.RoleBinding) { r.RoleRef.Name = "admin" }), RoleBindingRecreate},
		{"a roleRef of kind Role is re-created too", rb(func(r *rbacv1.RoleBinding) { r.RoleRef.Kind = "Role" }), RoleBindingRecreate},
		{"an existing captf-runner RoleBinding without the managed label is never touched", rb(func(r *rbacv1.RoleBinding) { r.Labels = nil }), RoleBindingForeign},
		{"managed=false is not managed", rb(func(r *rbacv1.RoleBinding) { r.Labels[infrav1.ManagedLabel] = "false"; r.RoleRef.Name = "admin" }), RoleBindingForeign},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanRoleBinding(tt.rb, subjects); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSweepTargets(t *testing.T) {
	obj := func(ns, name string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	found := []metav1.PartialObjectMetadata{obj("busy", "captf-runner"), obj("empty", "captf-runner"), obj("empty", "captf-run-x")}
	got := SweepTargets(map[string]bool{"busy": true}, found)
	if len(got) != 2 || got[0].Namespace != "empty" || got[1].Namespace != "empty" {
		t.Fatalf("a namespace that holds no TC, TM or TMP is swept, others are not: %v", got)
	}
}

func TestIdentityReadyAndEvents(t *testing.T) {
	sref := infrav1.SecretReference{Namespace: "creds", Name: "aws"}
	id := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "aws", Generation: 3}}
	steps := []struct {
		name   string
		found  bool
		nss    []string
		reason string
		event  string
	}{
		{"TCI Ready is set directly: True/SecretFound once its Secret exists", true, []string{"a", "b"}, infrav1.SecretFoundReason, infrav1.IdentitySecretFoundEvent},
		{"no event while nothing changes", true, []string{"a"}, infrav1.SecretFoundReason, ""},
		{"False/SecretNotFound when it goes missing, with IdentitySecretNotFound", false, nil, infrav1.SecretNotFoundReason, infrav1.IdentitySecretNotFoundEvent},
		{"IdentitySecretFound when it appears again", true, nil, infrav1.SecretFoundReason, infrav1.IdentitySecretFoundEvent},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			ev := SetIdentityStatus(id, IdentityStatus{Ready: IdentityReadyCondition(sref, s.found), Namespaces: s.nss})
			if len(id.Status.Conditions) != 1 || id.Status.Conditions[0].Reason != s.reason || id.Status.Conditions[0].ObservedGeneration != 3 {
				t.Fatalf("conditions %+v", id.Status.Conditions)
			}
			if fmt.Sprint(id.Status.Namespaces) != fmt.Sprint(s.nss) {
				t.Fatalf("namespaces %v", id.Status.Namespaces)
			}
			switch {
			case s.event == "" && len(ev) != 0:
				t.Fatalf("unexpected events %v", ev)
			case s.event != "" && (len(ev) != 1 || ev[0].Reason != s.event):
				t.Fatalf("events %v, want %s", ev, s.event)
			}
		})
	}
}

func TestUsageReason(t *testing.T) {
	u := Usage{Users: []ObjectRef{{infrav1.KindTerraformMachine, "ns", "m"}}, Namespaces: []string{"a", "b"}}
	if r := u.Reason("id"); !strings.Contains(r, "TerraformMachine ns/m") || strings.Contains(r, "more") {
		t.Fatalf("the rejection names one object still using it: %q", r)
	}
	u.Users = append(u.Users, ObjectRef{infrav1.KindTerraformCluster, "ns", "c"}, ObjectRef{infrav1.KindTerraformCluster, "ns", "d"})
	if r := u.Reason("id"); !strings.Contains(r, "TerraformMachine ns/m (and 2 more)") {
		t.Fatalf("and how many more: %q", r)
	}
	u.Users = nil
	if r := u.Reason("id"); !strings.Contains(r, "a, b") {
		t.Fatalf("or every namespace still holding a mirror: %q", r)
	}
	if (Usage{}).InUse() || (Usage{}).Reason("id") != "" {
		t.Fatal("an unused identity may be deleted")
	}
}

const sentinel = "SENTINEL-credential-value-7f3a"

func TestCredentialsNeverFormatted(t *testing.T) {
	a := Access{Name: "id", creds: &credentials{data: map[string][]byte{"K": []byte(sentinel)}}}
	js, _ := json.Marshal(a)
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), fmt.Sprint(a.MarshalLog()), fmt.Sprintf("%+v", *a.creds), fmt.Sprintf("%#v", a.creds), string(js)} {
		if strings.Contains(s, sentinel) {
			t.Fatalf("credential value formatted: %s", s)
		}
	}
	err := redactError(fmt.Errorf("server said: %s is invalid", sentinel), a.creds.data)
	if strings.Contains(err.Error(), sentinel) || !strings.Contains(err.Error(), redacted) {
		t.Fatalf("error text %q", err)
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if strings.Contains(wrapped.Error(), sentinel) {
		t.Fatal("wrapped error carries the value")
	}
}

// Security Model, per-object errors: a ServiceAccount whose opt-in could
// not be read keeps the binding it has, and gains none.
func TestKeptSubjects(t *testing.T) {
	rb := &rbacv1.RoleBinding{Subjects: []rbacv1.Subject{
		{Kind: rbacv1.ServiceAccountKind, Name: "a", Namespace: "ns"},
		{Kind: rbacv1.ServiceAccountKind, Name: "b", Namespace: "other"},
		{Kind: rbacv1.UserKind, Name: "c", Namespace: "ns"},
	}}
	cases := []struct {
		name     string
		existing *rbacv1.RoleBinding
		unknown  []string
		want     string
	}{
		{"no binding yet: nothing kept", nil, []string{"a"}, "[]"},
		{"a bound ServiceAccount of the namespace is kept", rb, []string{"a", "z"}, "[a]"},
		{"another namespace's subject is not kept", rb, []string{"b"}, "[]"},
		{"a subject that is not a ServiceAccount is not kept", rb, []string{"c"}, "[]"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(KeptSubjects(tt.existing, "ns", tt.unknown)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestMirrorOwner: the mirror is owned by the objects whose spec names the
// identity (book: Identities and Credentials, "How credentials reach a
// Job"; reference-facts §7, captf-creds-<identity>), so a cluster's fleet
// adds one owner reference, not one per machine.
func TestMirrorOwner(t *testing.T) {
	cluster := func(own, defaults string, deleting bool) *infrav1.TerraformCluster {
		c := tc("c", nil, nil)
		c.UID = "uid-c"
		if own != "" {
			c.Spec.IdentityRef = ref(own)
		}
		if defaults != "" {
			c.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: ref(defaults)}
		}
		if deleting {
			c.DeletionTimestamp = &metav1.Time{}
		}
		return c
	}
	machine := func(own string) *infrav1.TerraformMachine {
		m := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "uid-m"}}
		if own != "" {
			m.Spec.IdentityRef = ref(own)
		}
		return m
	}
	pool := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"}}
	for _, tt := range []struct {
		name    string
		obj     client.Object
		cluster *infrav1.TerraformCluster
		want    string
	}{
		{"a cluster owns the mirror of its own identity", cluster("a", "", false), nil, "uid-c"},
		{"a machine inheriting the cluster's identityRef puts the cluster's reference", machine(""), cluster("a", "", false), "uid-c"},
		{"a machine inheriting the cluster's defaults puts the cluster's reference", machine(""), cluster("a", "b", false), "uid-c"},
		{"a pool inheriting puts the cluster's reference", pool, cluster("a", "", false), "uid-c"},
		{"a machine's own identityRef the cluster also names: the cluster's reference", machine("a"), cluster("a", "", false), "uid-c"},
		{"a machine's own identityRef the cluster's defaults name: the cluster's reference", machine("b"), cluster("a", "b", false), "uid-c"},
		{"a machine's own identity the cluster does not name: its own reference", machine("x"), cluster("a", "b", false), "uid-m"},
		{"no cluster resolved: its own reference", machine("x"), nil, "uid-m"},
		{"the cluster being deleted: its own reference, so the mirror outlives the cluster", machine(""), cluster("a", "", true), "uid-m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id, src := IdentityRefFor(tt.obj, tt.cluster)
			if got := MirrorOwner(tt.obj, tt.cluster, id, src); string(got.GetUID()) != tt.want {
				t.Fatalf("owner %s, want %s", got.GetUID(), tt.want)
			}
		})
	}
}

// TestIsCAPTFMirrorOf: a Secret counts as an identity's mirror for its
// status and delete guard only as ensureMirror writes it (Secrets: the
// credential mirror's labels, annotation and owners); whether the owner
// exists with that UID is read by ownedByWorkload.
func TestIsCAPTFMirrorOf(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformCluster), Name: "c", UID: "u1"}
	made := func(mut func(s *corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: MirrorName("id"), Labels: MirrorLabels(),
			Annotations:     map[string]string{infrav1.IdentityAnnotation: "id"},
			OwnerReferences: []metav1.OwnerReference{owner}}}
		if mut != nil {
			mut(s)
		}
		return s
	}
	withOwner := func(r metav1.OwnerReference) func(*corev1.Secret) {
		return func(s *corev1.Secret) { s.OwnerReferences = []metav1.OwnerReference{r} }
	}
	cases := []struct {
		name string
		s    *corev1.Secret
		want bool
	}{
		{"as ensureMirror writes it", made(nil), true},
		{"owned by a machine", made(withOwner(metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformMachine), Name: "m", UID: "u2"})), true},
		{"owned by a pool among other owners", made(func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u3"},
				{APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformMachinePool), Name: "p", UID: "u4"}}
		}), true},
		{"no owner reference", made(func(s *corev1.Secret) { s.OwnerReferences = nil }), false},
		{"owned by something else", made(withOwner(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u1"})), false},
		{"owned by a kind of the same name in another group", made(withOwner(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: string(infrav1.KindTerraformCluster), Name: "c", UID: "u1"})), false},
		{"owned by a CAPTF kind that is not a workload", made(withOwner(metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: "TerraformClusterIdentity", Name: "id", UID: "u1"})), false},
		{"owner reference without a UID", made(withOwner(metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformCluster), Name: "c"})), false},
		{"without captf.io/managed", made(func(s *corev1.Secret) { delete(s.Labels, infrav1.ManagedLabel) }), false},
		{"without captf.io/mirrored", made(func(s *corev1.Secret) { delete(s.Labels, infrav1.MirroredLabel) }), false},
		{"naming another identity", made(func(s *corev1.Secret) { s.Annotations[infrav1.IdentityAnnotation] = "other" }), false},
		{"under another name", made(func(s *corev1.Secret) { s.Name = "captf-creds-other" }), false},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCAPTFMirrorOf(tt.s, "id"); got != tt.want {
				t.Fatalf("IsCAPTFMirrorOf = %v, want %v", got, tt.want)
			}
		})
	}
}
