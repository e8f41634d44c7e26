package setup

import (
	"context"
	"fmt"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// The cache answers a list by label selector by walking every object of the
// kind in the namespace and matching each one's labels. A pass lists its
// Jobs, pods, state and backup Secrets and Leases by labels that name the
// object, so in a namespace of N machines each pass walked N Jobs, N pods
// and several N Secrets: the cost of a pass grew with the fleet. The label
// keys below get a field index each, and a list whose selector requires
// one of them to equal a value is answered from that index (the rest of
// the selector still filters what the index returns).

// labelIndexes are, per list type, the indexed label keys, most selective
// first.
var labelIndexes = []struct {
	obj  client.Object
	list client.ObjectList
	keys []string
}{
	{&corev1.Secret{}, &corev1.SecretList{}, []string{
		infrav1.OwnerNameLabel, state.BackendSuffixLabel, infrav1.StateBackupSuffixLabel, infrav1.MirroredLabel,
	}},
	{&batchv1.Job{}, &batchv1.JobList{}, []string{infrav1.OwnerNameLabel}},
	{&corev1.Pod{}, &corev1.PodList{}, []string{infrav1.OwnerNameLabel, batchv1.JobNameLabel}},
	{&coordinationv1.Lease{}, &coordinationv1.LeaseList{}, []string{infrav1.OwnerNameLabel}},
}

// LabelIndex is the name of the field index of a label key.
func LabelIndex(key string) string { return "captf.label:" + key }

// labelIndexedCache answers the lists of labelIndexes from their indexes.
type labelIndexedCache struct {
	cache.Cache
	keys map[reflect.Type][]string
}

// newLabelIndexedCache is the manager's NewCache: controller-runtime's
// cache, with labelIndexes registered before it starts.
func newLabelIndexedCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return withLabelIndexes(context.Background(), c)
}

// withLabelIndexes registers labelIndexes on c and wraps it.
func withLabelIndexes(ctx context.Context, c cache.Cache) (cache.Cache, error) {
	lc := labelIndexedCache{Cache: c, keys: map[reflect.Type][]string{}}
	for _, ix := range labelIndexes {
		for _, key := range ix.keys {
			if err := c.IndexField(ctx, ix.obj, LabelIndex(key), labelValue(key)); err != nil {
				return nil, fmt.Errorf("failed to index %T by label %s: %w", ix.obj, key, err)
			}
		}
		lc.keys[reflect.TypeOf(ix.list)] = ix.keys
	}
	return lc, nil
}

func labelValue(key string) client.IndexerFunc {
	return func(o client.Object) []string {
		if v, ok := o.GetLabels()[key]; ok {
			return []string{v}
		}
		return nil
	}
}

// List answers a list whose label selector requires an indexed key to
// equal one value from that key's index; any other list as the cache does.
func (c labelIndexedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if key, value, ok := c.indexedRequirement(list, opts); ok {
		opts = append(opts[:len(opts):len(opts)], client.MatchingFields{LabelIndex(key): value})
	}
	return c.Cache.List(ctx, list, opts...)
}

func (c labelIndexedCache) indexedRequirement(list client.ObjectList, opts []client.ListOption) (string, string, bool) {
	keys := c.keys[reflect.TypeOf(list)]
	if len(keys) == 0 {
		return "", "", false
	}
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.FieldSelector != nil || lo.LabelSelector == nil {
		return "", "", false
	}
	reqs, selectable := lo.LabelSelector.Requirements()
	if !selectable {
		return "", "", false
	}
	for _, key := range keys {
		for _, r := range reqs {
			if r.Key() != key || (r.Operator() != selection.Equals && r.Operator() != selection.DoubleEquals) {
				continue
			}
			if v := r.Values(); v.Len() == 1 {
				return key, v.UnsortedList()[0], true
			}
		}
	}
	return "", "", false
}
