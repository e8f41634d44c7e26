package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The resources the recorder follows while the pages run.
var (
	jobsGVR       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	tcGVR         = infrav1.GroupVersion.WithResource("terraformclusters")
	tmGVR         = infrav1.GroupVersion.WithResource("terraformmachines")
	identityGVR   = infrav1.GroupVersion.WithResource("terraformclusteridentities")
	clusterGVR    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "clusters"}
	machineGVR    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}
	eventsGVR     = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	followedKinds = map[schema.GroupVersionResource]string{
		jobsGVR: "Job", tcGVR: "TerraformCluster", tmGVR: "TerraformMachine",
		identityGVR: "TerraformClusterIdentity", clusterGVR: "Cluster", machineGVR: "Machine",
	}
)

// history is what the recorder saw of one object over its life.
type history struct {
	kind, name string
	// last is the object as last seen; deleted, whether it went.
	last    *unstructured.Unstructured
	deleted bool
	// ready: Ready was True at some point; phases, every status.phase.
	ready  bool
	phases map[string]bool
	// A Job's outcome, as its status showed it.
	succeeded, failed bool
	// statuses holds every distinct status the object had, as JSON.
	statuses map[string]bool
}

func (h *history) label(key string) string { return h.last.GetLabels()[key] }

// recorder follows the objects the pages create, through watches that
// resume where they stopped, so that every state an object passed through
// is seen, a Job that lives for seconds included.
type recorder struct {
	client dynamic.Interface
	ns     string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	seen map[string]*history
	errs []error
}

func startRecorder(ctx context.Context, client dynamic.Interface, ns string) *recorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &recorder{client: client, ns: ns, cancel: cancel, seen: map[string]*history{}}
	for gvr, kind := range followedKinds {
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if gvr != identityGVR {
			ri = client.Resource(gvr).Namespace(ns)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.follow(ctx, ri, kind); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Errorf("following %s: %w", kind, err))
				r.mu.Unlock()
			}
		}()
	}
	return r
}

func (r *recorder) stop() []error {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}

func (r *recorder) follow(ctx context.Context, ri dynamic.ResourceInterface, kind string) error {
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		r.observe(kind, &list.Items[i], false)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the watch ended")
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch error: %v", ev.Object)
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				r.observe(kind, u, ev.Type == watch.Deleted)
			}
		}
	}
}

func (r *recorder) observe(kind string, u *unstructured.Unstructured, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := kind + "/" + u.GetName()
	h := r.seen[key]
	if h == nil {
		h = &history{kind: kind, name: u.GetName(), phases: map[string]bool{}, statuses: map[string]bool{}}
		r.seen[key] = h
	}
	h.last, h.deleted = u, deleted
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if b, err := json.Marshal(status); err == nil {
		h.statuses[string(b)] = true
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "" {
		h.phases[phase] = true
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == infrav1.ReadyCondition && c["status"] == "True" {
			h.ready = true
		}
	}
	if n, _, _ := unstructured.NestedInt64(u.Object, "status", "succeeded"); n > 0 {
		h.succeeded = true
	}
	if n, _, _ := unstructured.NestedInt64(u.Object, "status", "failed"); n > 0 {
		h.failed = true
	}
}

// find returns what was seen of the objects of kind whose labels hold
// every pair of labels, by name.
func (r *recorder) find(kind string, labels map[string]string) []*history {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*history
	for _, h := range r.seen {
		if h.kind != kind {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && h.label(k) == v
		}
		if match {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// get returns what was seen of kind/name, or nil.
func (r *recorder) get(kind, name string) *history {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[kind+"/"+name]
}

// jobsOf returns the Jobs seen for the CAPTF object kind/name, by their
// operation label.
func (r *recorder) jobsOf(kind, name string) map[string][]*history {
	out := map[string][]*history{}
	for _, h := range r.find("Job", map[string]string{infrav1.OwnerKindLabel: kind, infrav1.OwnerNameLabel: name}) {
		op := h.label(infrav1.OpLabel)
		out[op] = append(out[op], h)
	}
	return out
}

// statusTexts returns every status every object had, as JSON, with each
// Job's spec too.
func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, h := range r.seen {
		for s := range h.statuses {
			out = append(out, h.kind+"/"+h.name+" status "+s)
		}
		if h.kind == "Job" {
			if b, err := json.Marshal(h.last.Object["spec"]); err == nil {
				out = append(out, "Job/"+h.name+" spec "+string(b))
			}
		}
	}
	return out
}

// summary describes everything seen, for a failing test's log.
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for key, h := range r.seen {
		s := fmt.Sprintf("%s: ready=%v phases=%v succeeded=%v failed=%v deleted=%v", key, h.ready, keys(h.phases), h.succeeded, h.failed, h.deleted)
		if conds, _, _ := unstructured.NestedSlice(h.last.Object, "status", "conditions"); len(conds) > 0 {
			b, _ := json.Marshal(conds)
			s += " conditions=" + string(b)
		}
		lines = append(lines, s)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// events returns the events of every namespace, as the API server keeps
// them.
func events(ctx context.Context, client dynamic.Interface) ([]eventRecord, error) {
	list, err := client.Resource(eventsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventRecord
	for _, u := range list.Items {
		var e eventRecord
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// eventRecord is the part of an events.k8s.io/v1 Event the checks read.
type eventRecord struct {
	Reason    string `json:"reason"`
	Note      string `json:"note"`
	Action    string `json:"action"`
	Regarding struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"regarding"`
}

func (e eventRecord) String() string {
	return fmt.Sprintf("%s %s/%s: %s", e.Reason, e.Regarding.Kind, e.Regarding.Name, e.Note)
}
