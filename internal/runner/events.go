package runner

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// Event emission limits: each request gets eventRequestTimeout; after
// eventMaxFailures consecutive failures no more events are sent for the
// run; at most eventQueue events wait, later ones are dropped; closing
// waits at most eventFlushTimeout for the queue.
const (
	eventRequestTimeout = 3 * time.Second
	eventMaxFailures    = 3
	eventQueue          = 64
	eventFlushTimeout   = 3 * time.Second
	eventNoteMax        = 1024

	// ReportingController is the reporting controller of the runner's
	// events.
	ReportingController = "captf.io/runner"
)

// Event types.
const (
	EventNormal  = corev1.EventTypeNormal
	EventWarning = corev1.EventTypeWarning
)

// Recorder emits the runner's events. Emit never blocks the run and never
// fails it.
type Recorder interface {
	Emit(eventType, reason, action, note string)
	// Close flushes queued events, waiting at most a few seconds.
	Close()
}

// nopRecorder is used when events are off.
type nopRecorder struct{}

func (nopRecorder) Emit(string, string, string, string) {}
func (nopRecorder) Close()                              {}

// eventSink posts one event.
type eventSink interface {
	Create(ctx context.Context, ev *eventsv1.Event) error
}

type restSink struct{ client rest.Interface }

func (s restSink) Create(ctx context.Context, ev *eventsv1.Event) error {
	return s.client.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(ctx).Error()
}

// asyncRecorder queues events and sends them in order from one goroutine.
type asyncRecorder struct {
	sink     eventSink
	regard   corev1.ObjectReference
	related  *corev1.ObjectReference
	instance string

	mu     sync.Mutex
	closed bool
	queue  chan *eventsv1.Event
	done   chan struct{}
	seq    int
}

func newAsyncRecorder(sink eventSink, ref ObjectRef, jobName string) *asyncRecorder {
	host, _ := os.Hostname()
	if host == "" {
		host = "runner"
	}
	r := &asyncRecorder{
		sink: sink,
		regard: corev1.ObjectReference{
			APIVersion: ref.APIVersion,
			Kind:       ref.Kind,
			Namespace:  ref.Namespace,
			Name:       ref.Name,
			UID:        types.UID(ref.UID),
		},
		instance: text.Truncate(host, 128),
		queue:    make(chan *eventsv1.Event, eventQueue),
		done:     make(chan struct{}),
	}
	if jobName != "" {
		r.related = &corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: ref.Namespace, Name: jobName}
	}
	go r.loop()
	return r
}

func (r *asyncRecorder) Emit(eventType, reason, action, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.seq++
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x%02x", text.Truncate(r.regard.Name, 200), now.UnixNano(), r.seq%256),
			Namespace: r.regard.Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: ReportingController,
		ReportingInstance:   r.instance,
		Action:              text.Truncate(action, 128),
		Reason:              reason,
		Type:                eventType,
		Regarding:           r.regard,
		Related:             r.related,
		Note:                text.Truncate(note, eventNoteMax),
	}
	select {
	case r.queue <- ev:
	default:
		klog.V(2).InfoS("Event queue full; dropping event", "reason", reason)
	}
}

func (r *asyncRecorder) loop() {
	defer close(r.done)
	failures := 0
	for ev := range r.queue {
		if failures >= eventMaxFailures {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), eventRequestTimeout)
		err := r.sink.Create(ctx, ev)
		cancel()
		if err != nil {
			failures++
			klog.InfoS("Emitting an event failed", "reason", ev.Reason, "err", err.Error(), "consecutiveFailures", failures)
			if failures >= eventMaxFailures {
				klog.InfoS("Giving up on events for the rest of the run")
			}
			continue
		}
		failures = 0
	}
}

func (r *asyncRecorder) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-time.After(eventFlushTimeout):
		klog.InfoS("Events not flushed in time; leaving them behind")
	}
}

// NewRecorder returns the run's event recorder: a no-op when --event-object
// is unset, otherwise events on that object through the in-cluster
// configuration, or outside a cluster through --events-kubeconfig or the
// backend's config_path kubeconfig. A recorder that cannot be built is
// logged and replaced by a no-op: events never fail a run.
func NewRecorder(o *Options) Recorder {
	if o.EventObject == "" {
		return nopRecorder{}
	}
	ref, err := ParseObjectRef(o.EventObject)
	if err != nil {
		klog.InfoS("Events off", "err", err.Error())
		return nopRecorder{}
	}
	cfg, err := eventsConfig(o)
	if err != nil {
		klog.InfoS("Events off: no API server configuration", "err", err.Error())
		return nopRecorder{}
	}
	client, err := eventsClient(cfg)
	if err != nil {
		klog.InfoS("Events off: building the events client failed", "err", err.Error())
		return nopRecorder{}
	}
	return newAsyncRecorder(restSink{client}, ref, o.JobName)
}

func eventsConfig(o *Options) (*rest.Config, error) {
	if o.EventsKubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", o.EventsKubeconfig)
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return rest.InClusterConfig()
	}
	if p, ok := o.BackendConfigValue("config_path"); ok && p != "" {
		return clientcmd.BuildConfigFromFlags("", p)
	}
	return rest.InClusterConfig()
}

// eventsClient is a REST client for events.k8s.io/v1 alone, so the runner
// does not link every API group's types.
func eventsClient(cfg *rest.Config) (rest.Interface, error) {
	c, err := restClient(cfg, eventsv1.SchemeGroupVersion, eventsv1.AddToScheme, "/apis")
	if err != nil {
		return nil, err
	}
	return c, nil
}

// restClient is a JSON REST client of one API group version, whose types
// add registers, with the runner's user agent, rate and request timeout.
func restClient(cfg *rest.Config, gv schema.GroupVersion, add func(*runtime.Scheme) error, apiPath string) (*rest.RESTClient, error) {
	scheme := runtime.NewScheme()
	if err := add(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	c.UserAgent = "captf-runner"
	c.QPS, c.Burst = 50, 100
	c.Timeout = eventRequestTimeout
	return rest.RESTClientFor(c)
}
