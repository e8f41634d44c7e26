package lifecycle

import (
	"context"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ownWrites remembers the Secrets and Jobs this flow wrote itself (the
// durable inputs, the per-run Secret and its hand-over to the Job, the Job
// and its bookkept mark, the state's adoption and backups, the per-run
// Secret's deletion), by the version each write left them at, so that
// their watches drop the event of that write: the pass that made it acted
// on it, and a pass woken by it would find nothing to do. Each watch event
// is one write, so anyone else's write (the runner's state, the Job
// controller's status, a person's edit) is an event of its own and still
// wakes the object.
type ownWrites struct{ m sync.Map }

// ownKey names an object of a watched kind ("" for other kinds).
func ownKey(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret/" + obj.GetNamespace() + "/" + obj.GetName()
	case *batchv1.Job:
		return "Job/" + obj.GetNamespace() + "/" + obj.GetName()
	}
	return ""
}

// ownVersionsKept is how many of an object's latest own writes are
// remembered (a pass writes the per-run Secret twice, a Job's deletion
// follows its mark).
const ownVersionsKept = 4

// deletedVersion marks an own deletion.
const deletedVersion = "deleted"

func (o *ownWrites) remember(obj client.Object, version string) {
	k := ownKey(obj)
	if o == nil || k == "" || version == "" {
		return
	}
	var vs []string
	if v, ok := o.m.Load(k); ok {
		vs = v.([]string)
	}
	vs = append(slices.Clone(vs), version)
	if len(vs) > ownVersionsKept {
		vs = vs[len(vs)-ownVersionsKept:]
	}
	o.m.Store(k, vs)
}

// take says whether obj at version is an own write, and forgets it.
func (o *ownWrites) take(obj client.Object, version string) bool {
	k := ownKey(obj)
	if o == nil || k == "" {
		return false
	}
	v, ok := o.m.Load(k)
	if !ok {
		return false
	}
	vs := v.([]string)
	i := slices.Index(vs, version)
	if i < 0 {
		return false
	}
	if vs = slices.Delete(slices.Clone(vs), i, i+1); len(vs) == 0 {
		o.m.Delete(k)
	} else {
		o.m.Store(k, vs)
	}
	return true
}

// predicate drops the events of own writes.
func (o *ownWrites) predicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !o.take(e.Object, e.Object.GetResourceVersion()) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !o.take(e.ObjectNew, e.ObjectNew.GetResourceVersion()) },
		DeleteFunc: func(e event.DeleteEvent) bool { return !o.take(e.Object, deletedVersion) },
	}
}

// recordingClient is the flow's client: it remembers its own writes of
// Secrets and Jobs in own.
type recordingClient struct {
	client.Client
	own *ownWrites
}

func (c recordingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	if err == nil {
		c.own.remember(obj, obj.GetResourceVersion())
	}
	return err
}

func (c recordingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	if err == nil {
		c.own.remember(obj, obj.GetResourceVersion())
	}
	return err
}

func (c recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, patch, opts...)
	if err == nil {
		c.own.remember(obj, obj.GetResourceVersion())
	}
	return err
}

func (c recordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	if err == nil {
		c.own.remember(obj, deletedVersion)
	}
	return err
}
