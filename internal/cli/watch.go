package cli

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// watchScope is what status --watch follows: the objects of a namespace
// ("" for every namespace), or one object.
type watchScope struct {
	namespace string
	one       *target
	all       bool
}

// watchEvent is what one kind's watch reports: an object added, changed or
// deleted; or, after the watch expired and the kind was listed again, every
// object of the kind (sync); or the error that ends the watch.
type watchEvent struct {
	kind    kind
	obj     *object
	deleted bool
	sync    []object
	err     error
}

// watchStatus prints the rows, then a row each time an object's row
// changes (its status, its Jobs' outcome, what it waits on), until ctx
// ends. Each kind is watched from the resourceVersion its list returned; a
// watch the server closes is opened again from the last version seen, and
// one whose version expired lists the kind again and goes on from there.
func watchStatus(ctx context.Context, o *options, k *kube, sc watchScope, op output, s Settings) error {
	kds := kinds
	opts := metav1.ListOptions{}
	if sc.one != nil {
		kds = []kind{sc.one.kind}
		opts.FieldSelector = "metadata.name=" + sc.one.name
	}
	objs := map[string]object{}
	versions := map[string]string{}
	for _, kd := range kds {
		l, rv, err := k.listAt(ctx, kd, sc.namespace, opts)
		if err != nil {
			return err
		}
		for _, ob := range l {
			objs[objectKey(ob)] = ob
		}
		versions[kd.Kind] = rv
	}
	if sc.one != nil && len(objs) == 0 {
		return explain(apierrors.NewNotFound(sc.one.kind.GVR().GroupResource(), sc.one.name), sc.one.String(), k.namespace)
	}
	w := &statusWatch{o: o, k: k, sc: sc, op: op, s: s, printed: map[string]Row{}}
	if err := w.print(ctx, objs, nil); err != nil {
		return err
	}
	events := make(chan watchEvent)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, kd := range kds {
		go follow(ctx, k, kd, sc.namespace, opts, versions[kd.Kind], events)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if ev.err != nil {
				return ev.err
			}
			var gone []Row
			switch {
			case ev.sync != nil:
				for key, ob := range objs {
					if ob.kind.Kind == ev.kind.Kind {
						delete(objs, key)
					}
				}
				for _, ob := range ev.sync {
					objs[objectKey(ob)] = ob
				}
			case ev.deleted:
				key := objectKey(*ev.obj)
				delete(objs, key)
				if r, ok := w.printed[key]; ok {
					r.WaitingOn, r.Hint = "deleted", ""
					gone = append(gone, r)
					delete(w.printed, key)
				}
			default:
				objs[objectKey(*ev.obj)] = *ev.obj
			}
			if err := w.print(ctx, objs, gone); err != nil {
				return err
			}
		}
	}
}

func objectKey(ob object) string {
	return ob.kind.Kind + "/" + ob.w.GetNamespace() + "/" + ob.w.GetName()
}

// statusWatch is what status --watch has printed.
type statusWatch struct {
	o       *options
	k       *kube
	sc      watchScope
	op      output
	s       Settings
	printed map[string]Row
	started bool
	widths  columnWidths
}

// print prints the rows of objs that differ from what was printed last,
// and gone, the rows of objects deleted since.
func (w *statusWatch) print(ctx context.Context, objs map[string]object, gone []Row) error {
	list := make([]object, 0, len(objs))
	for _, ob := range objs {
		list = append(list, ob)
	}
	js, err := w.k.jobs(ctx, w.sc.namespace)
	if err != nil {
		return err
	}
	var changed []Row
	for _, r := range rowsFor(list, js, w.s) {
		key := r.Kind + "/" + r.Namespace + "/" + r.Name
		if prev, ok := w.printed[key]; ok && reflect.DeepEqual(prev, r) {
			continue
		}
		w.printed[key] = r
		changed = append(changed, r)
	}
	changed = append(changed, gone...)
	if len(changed) == 0 {
		return nil
	}
	header := !w.started
	w.started = true
	out := w.o.streams.Out
	if w.op.structured() {
		for _, r := range changed {
			if err := printRowsWith(out, w.op.printer, []Row{r}, false); err != nil {
				return err
			}
		}
		return nil
	}
	head, lines := tableCells(changed, w.o.now(), w.sc.all, w.op.wide)
	if header {
		lines = append([][]string{head}, lines...)
	}
	return w.widths.print(out, lines)
}

// follow watches one kind from rv and sends what changes to events until
// ctx ends.
func follow(ctx context.Context, k *kube, kd kind, ns string, opts metav1.ListOptions, rv string, events chan<- watchEvent) {
	send := func(ev watchEvent) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		wo := opts
		wo.ResourceVersion, wo.AllowWatchBookmarks = rv, true
		wi, err := k.dyn.Resource(kd.GVR()).Namespace(ns).Watch(ctx, wo)
		expired := false
		switch {
		case err == nil:
			rv, expired, err = drain(ctx, kd, wi, rv, send)
			wi.Stop()
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			expired, err = true, nil
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(watchEvent{err: explain(err, kd.Resource, ns)})
			return
		}
		if !expired {
			// The server ended the watch (its timeout): open it again
			// from the last version seen.
			continue
		}
		l, newRV, err := k.listAt(ctx, kd, ns, opts)
		if err != nil {
			if ctx.Err() == nil {
				send(watchEvent{err: err})
			}
			return
		}
		if l == nil {
			l = []object{}
		}
		rv = newRV
		if !send(watchEvent{kind: kd, sync: l}) {
			return
		}
	}
}

// errWatchEvent is an error event of a watch that is not an expiry.
var errWatchEvent = errors.New("the watch reported an error")

// drain reads one watch until it ends, sending each object's change; it
// returns the last resourceVersion seen and whether the watch expired.
func drain(ctx context.Context, kd kind, wi watch.Interface, rv string, send func(watchEvent) bool) (string, bool, error) {
	for {
		var (
			ev watch.Event
			ok bool
		)
		select {
		case <-ctx.Done():
			return rv, false, nil
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return rv, false, nil
		}
		switch ev.Type {
		case watch.Error:
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return rv, true, nil
			}
			return rv, false, fmt.Errorf("%w: %v", errWatchEvent, err)
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			continue
		}
		u, isU := ev.Object.(*unstructured.Unstructured)
		if !isU {
			continue
		}
		rv = u.GetResourceVersion()
		ob, err := decode(kd, u)
		if err != nil {
			return rv, false, err
		}
		if !send(watchEvent{kind: kd, obj: &ob, deleted: ev.Type == watch.Deleted}) {
			return rv, false, nil
		}
	}
}
