package setup

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// recordingCache remembers the field selectors of the lists it answers.
type recordingCache struct {
	cache.Cache
	mu     sync.Mutex
	fields []string
}

func (r *recordingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	r.mu.Lock()
	if lo.FieldSelector != nil {
		r.fields = append(r.fields, lo.FieldSelector.String())
	} else {
		r.fields = append(r.fields, "")
	}
	r.mu.Unlock()
	return r.Cache.List(ctx, list, opts...)
}

func (r *recordingCache) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fields[len(r.fields)-1]
}

// TestManagerCacheListsByLabelIndex checks the manager's cache on a real
// API server: a list whose selector requires an indexed label (owner name,
// state suffix, backup suffix, mirrored, Job name) to equal a value is
// answered from that label's index, with the same objects the label
// selector alone finds; any other list is left to the cache as asked.
func TestManagerCacheListsByLabelIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, ns("indexed"), ns("indexed-other"))
	owned := func(ns, name, kind, owner string, more map[string]string) *corev1.Secret {
		l := map[string]string{infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kind, infrav1.OwnerNameLabel: owner}
		for k, v := range more {
			l[k] = v
		}
		return secret(ns, name, l)
	}
	create(t, c,
		owned("indexed", "a-1", "TerraformMachine", "a", nil),
		owned("indexed", "a-2", "TerraformMachine", "a", map[string]string{state.BackendSuffixLabel: "sfx-a"}),
		owned("indexed", "a-cluster", "TerraformCluster", "a", nil),
		owned("indexed", "b-1", "TerraformMachine", "b", map[string]string{infrav1.MirroredLabel: "true"}),
		owned("indexed-other", "a-1", "TerraformMachine", "a", nil),
	)

	opts := cacheOptions(DefaultOptions(), &secretGate{})
	opts.Scheme = NewScheme() // the manager's, which its cache gets from it
	inner, err := cache.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingCache{Cache: inner}
	lc, err := withLabelIndexes(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = lc.Start(ctx) }()
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if !lc.WaitForCacheSync(sctx) {
		t.Fatal("the cache did not sync")
	}
	// Wait for the informer to hold all five.
	var all corev1.SecretList
	for deadline := time.Now().Add(time.Minute); ; {
		if err := lc.List(ctx, &all, client.MatchingLabels{infrav1.ManagedLabel: "true"}); err != nil {
			t.Fatal(err)
		}
		if n := countIn(all.Items, "indexed", "indexed-other"); n == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	cases := []struct {
		name      string
		opts      []client.ListOption
		wantIndex string
		want      []string
	}{
		{"a machine's Secrets, by owner kind and name", []client.ListOption{client.InNamespace("indexed"),
			client.MatchingLabels{infrav1.OwnerKindLabel: "TerraformMachine", infrav1.OwnerNameLabel: "a"}},
			LabelIndex(infrav1.OwnerNameLabel) + "=a", []string{"indexed/a-1", "indexed/a-2"}},
		{"a state by its suffix", []client.ListOption{client.InNamespace("indexed"),
			client.MatchingLabels{state.BackendSuffixLabel: "sfx-a"}},
			LabelIndex(state.BackendSuffixLabel) + "=sfx-a", []string{"indexed/a-2"}},
		{"the mirrors of a namespace", []client.ListOption{client.InNamespace("indexed"),
			client.MatchingLabels{infrav1.MirroredLabel: "true"}},
			LabelIndex(infrav1.MirroredLabel) + "=true", []string{"indexed/b-1"}},
		{"every namespace", []client.ListOption{
			client.MatchingLabels{infrav1.OwnerKindLabel: "TerraformMachine", infrav1.OwnerNameLabel: "a"}},
			LabelIndex(infrav1.OwnerNameLabel) + "=a", []string{"indexed-other/a-1", "indexed/a-1", "indexed/a-2"}},
		{"no indexed label: left as asked", []client.ListOption{client.InNamespace("indexed"),
			client.MatchingLabels{infrav1.OwnerKindLabel: "TerraformCluster"}},
			"", []string{"indexed/a-cluster"}},
		{"a field selector of the caller's own: left as asked", []client.ListOption{client.InNamespace("indexed"),
			client.MatchingLabels{infrav1.OwnerNameLabel: "b"}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(LabelIndex(infrav1.MirroredLabel), "true")}},
			LabelIndex(infrav1.MirroredLabel) + "=true", []string{"indexed/b-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l corev1.SecretList
			if err := lc.List(ctx, &l, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if got := rec.last(); got != tc.wantIndex {
				t.Errorf("the cache was asked with field selector %q, want %q", got, tc.wantIndex)
			}
			var got []string
			for _, s := range l.Items {
				if s.Namespace == "indexed" || s.Namespace == "indexed-other" {
					got = append(got, s.Namespace+"/"+s.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("listed %v, want %v", got, tc.want)
			}
		})
	}
}

func countIn(items []corev1.Secret, namespaces ...string) int {
	n := 0
	for _, s := range items {
		if slices.Contains(namespaces, s.Namespace) {
			n++
		}
	}
	return n
}
