package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// snapshot is the object as the pass read it, taken with the patch helper:
// the base of the pass's one status patch.
type snapshot struct {
	helper *patch.Helper
	before client.Object
}

func takeSnapshot(obj client.Object, c client.Client) (snapshot, error) {
	helper, err := patch.NewHelper(obj, c)
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{helper: helper, before: obj.DeepCopyObject().(client.Object)}, nil
}

// advance records on the snapshot an annotation the pass wrote itself with
// its own patch, which left the object at written's version.
func (s snapshot) advance(written client.Object, annotation string) {
	if s.before == nil {
		return
	}
	a := map[string]string{}
	for k, v := range s.before.GetAnnotations() {
		a[k] = v
	}
	a[annotation] = written.GetAnnotations()[annotation]
	s.before.SetAnnotations(a)
	s.before.SetResourceVersion(written.GetResourceVersion())
}

// writeObject writes what the pass changed on the object. A pass that
// changed only the status sends one merge patch of the status subresource
// (conditions and the other fields together, where the patch helper sends
// the conditions and the rest as two patches); one that also changed
// metadata or spec first patches those, then the status. Each patch
// carries the resourceVersion it builds on, so it applies only to the
// object the pass decided on, which makes the whole-list merge of the
// conditions and finalizers safe. A conflict (someone else wrote the object
// since the pass read it) goes through the patch helper, which merges the
// owned conditions onto the latest object.
func (f *Flow) writeObject(ctx context.Context, p *Pass) error {
	err := f.patchLocked(ctx, p)
	if err == nil || !apierrors.IsConflict(err) {
		return err
	}
	return p.snap.helper.Patch(ctx, p.Obj, patch.WithOwnedConditions{Conditions: ownedConditions})
}

// patchLocked sends the pass's changes as at most two patches, each under
// an optimistic lock.
func (f *Flow) patchLocked(ctx context.Context, p *Pass) error {
	before := p.snap.before
	data, err := client.MergeFrom(before).Data(p.Obj)
	if err != nil {
		return fmt.Errorf("failed to compute the patch: %w", err)
	}
	var diff map[string]json.RawMessage
	if err := json.Unmarshal(data, &diff); err != nil {
		return fmt.Errorf("failed to read the patch: %w", err)
	}
	status, hasStatus := diff["status"]
	delete(diff, "status")
	if err := dropVersion(diff); err != nil {
		return err
	}
	version := before.GetResourceVersion()
	if len(diff) > 0 {
		out := p.Obj.DeepCopyObject().(client.Object)
		body, err := lockedPatch(diff, version)
		if err != nil {
			return err
		}
		if err := p.writes.Patch(ctx, out, client.RawPatch(types.MergePatchType, body)); err != nil {
			return err
		}
		version = out.GetResourceVersion()
		if g := out.GetGeneration(); g != p.Obj.GetGeneration() {
			// The pass's own spec write (spec.providerID) moved the
			// generation: what it observed is that new spec, so its
			// status says so, and no later pass has to write the
			// observedGeneration again.
			observedOwnSpec(p, g)
			if status, hasStatus, err = statusDiff(before, p.Obj); err != nil {
				return err
			}
		}
	}
	if !hasStatus {
		return nil
	}
	body, err := lockedPatch(map[string]json.RawMessage{"status": status}, version)
	if err != nil {
		return err
	}
	return p.writes.Status().Patch(ctx, p.Obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, body))
}

// statusDiff is the status part of the merge patch from before to obj.
func statusDiff(before, obj client.Object) (json.RawMessage, bool, error) {
	data, err := client.MergeFrom(before).Data(obj)
	if err != nil {
		return nil, false, fmt.Errorf("failed to compute the patch: %w", err)
	}
	var diff map[string]json.RawMessage
	if err := json.Unmarshal(data, &diff); err != nil {
		return nil, false, fmt.Errorf("failed to read the patch: %w", err)
	}
	status, ok := diff["status"]
	return status, ok, nil
}

// observedOwnSpec moves the object to generation g, which the pass's own
// spec write produced, and with it status.observedGeneration and every
// condition that observed the generation before.
func observedOwnSpec(p *Pass, g int64) {
	old := p.Obj.GetGeneration()
	p.Obj.SetGeneration(g)
	if st := p.Status(); st.ObservedGeneration == old {
		st.ObservedGeneration = g
	}
	if c, ok := p.Obj.(interface {
		GetConditions() []metav1.Condition
		SetConditions([]metav1.Condition)
	}); ok {
		conds := c.GetConditions()
		for i := range conds {
			if conds[i].ObservedGeneration == old {
				conds[i].ObservedGeneration = g
			}
		}
		c.SetConditions(conds)
	}
}

// dropVersion removes metadata.resourceVersion from a diff (the object
// keeps the version the pass read while the snapshot moves on with the
// pass's own writes), and metadata when nothing else of it changed.
func dropVersion(diff map[string]json.RawMessage) error {
	raw, ok := diff["metadata"]
	if !ok {
		return nil
	}
	meta := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("failed to read the metadata patch: %w", err)
	}
	if _, ok := meta["resourceVersion"]; !ok {
		return nil
	}
	delete(meta, "resourceVersion")
	if len(meta) == 0 {
		delete(diff, "metadata")
		return nil
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	diff["metadata"] = b
	return nil
}

// lockedPatch adds metadata.resourceVersion to a merge patch.
func lockedPatch(diff map[string]json.RawMessage, version string) ([]byte, error) {
	meta := map[string]json.RawMessage{}
	if raw, ok := diff["metadata"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("failed to read the metadata patch: %w", err)
		}
	}
	v, err := json.Marshal(version)
	if err != nil {
		return nil, err
	}
	meta["resourceVersion"] = v
	out := make(map[string]json.RawMessage, len(diff)+1)
	for k, raw := range diff {
		out[k] = raw
	}
	if out["metadata"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}
