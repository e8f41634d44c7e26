package terraformmachinetemplate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Name is the controller's name (the controller label of
// controller_runtime_* series).
const Name = "terraformmachinetemplate"

const (
	eventAction = "ResolveCapacity"
	// DefaultRetryInterval spaces retries of a failed image inspection.
	DefaultRetryInterval = time.Minute
	// DefaultTimeout bounds one image inspection.
	DefaultTimeout = 30 * time.Second
	// maxMessage bounds a condition message or event note.
	maxMessage = 1024
)

// Options configure the controller.
type Options struct {
	// WatchFilter, when set, restricts reconciles to templates labeled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilter string
	// Concurrency is the number of workers (default 1). At most
	// MaxConcurrentInspections of them read from registries at once.
	Concurrency int
	// Live reads image pull Secrets and the runner ServiceAccount (default
	// mgr.GetAPIReader()).
	Live client.Reader
	// Recorder emits the events (default mgr.GetEventRecorder("captf.io/manager")).
	Recorder events.EventRecorder
	// InsecureRegistries reaches every registry over plain HTTP (tests).
	InsecureRegistries bool
	// AllowPrivateRegistries lets inspection reach registries on addresses
	// that are not public (--allow-private-registries).
	AllowPrivateRegistries bool
	// Platform picks the image of a multi-platform index (default linux and
	// the manager's architecture).
	Platform *v1.Platform
	// Transport, when set, carries registry requests.
	Transport http.RoundTripper
	// Timeout bounds one inspection (default DefaultTimeout).
	Timeout time.Duration
	// RetryInterval spaces retries after ImageInspectFailed (default
	// DefaultRetryInterval).
	RetryInterval time.Duration
	// UserAgent names CAPTF to registries.
	UserAgent string
}

// Reconciler reconciles TerraformMachineTemplates.
type Reconciler struct {
	Client        client.Client
	Live          client.Reader
	Recorder      events.EventRecorder
	Inspector     *Inspector
	Timeout       time.Duration
	RetryInterval time.Duration
}

// Setup registers the controller with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if o.Platform != nil {
		platform = *o.Platform
	}
	r := &Reconciler{
		Client:        mgr.GetClient(),
		Live:          o.Live,
		Recorder:      o.Recorder,
		Inspector:     &Inspector{Insecure: o.InsecureRegistries, AllowPrivate: o.AllowPrivateRegistries, Platform: platform, Transport: o.Transport, UserAgent: o.UserAgent},
		Timeout:       o.Timeout,
		RetryInterval: o.RetryInterval,
	}
	if r.Live == nil {
		r.Live = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("captf.io/manager")
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	r.Inspector.Timeout = r.Timeout
	if r.RetryInterval <= 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	log := mgr.GetLogger().WithValues("controller", Name)
	err := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(o.Concurrency, 1),
			NewQueue: watches.Shard{Filter: o.WatchFilter}.Queue(mgr.GetCache(), func() client.Object { return &infrav1.TerraformMachineTemplate{} })}).
		For(&infrav1.TerraformMachineTemplate{}, builder.WithPredicates(
			predicate.GenerationChangedPredicate{},
			predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, o.WatchFilter),
		)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("failed to set up the %s controller: %w", Name, err)
	}
	return nil
}

// Reconcile resolves one template's capacity from its image when the image
// changed or the last resolution did not succeed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &infrav1.TerraformMachineTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	image := t.Spec.Template.Spec.Source.Image
	prev := meta.FindStatusCondition(t.Status.Conditions, infrav1.CapacityResolvedCondition)
	if upToDate(t, prev, image) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("image", image)

	orig := t.DeepCopy()
	before := &orig.Status
	res, inspectErr := r.resolve(ctx, t, image)
	apply(t, res, inspectErr, image)
	// One status write carries the condition with the capacity, nodeInfo
	// and capacitySource it speaks for, so no reader sees
	// CapacityResolved=True beside the previous image's capacity (a
	// patch helper writes conditions and the rest of status in two
	// requests). The manager is the template status's only writer; the
	// optimistic lock turns a concurrent write into a retry, not a loss.
	if err := r.Client.Status().Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to patch the status of TerraformMachineTemplate %s: %w", req.NamespacedName, err)
	}
	r.report(log, t, prev, before, res, inspectErr)
	if inspectErr != nil {
		return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
	}
	return ctrl.Result{}, nil
}

// upToDate: the capacity was resolved (or found not declared) from the
// image the spec names now, for this generation's spec.
func upToDate(t *infrav1.TerraformMachineTemplate, prev *metav1.Condition, image string) bool {
	return prev != nil && prev.Status == metav1.ConditionTrue &&
		t.Status.CapacitySource != nil && t.Status.CapacitySource.Image == image
}

// resolve reads the image's labels and interprets them. The pull Secrets
// are read within r.Timeout; the registry reads get their own r.Timeout
// once the inspector has a slot for them (Inspector.Timeout).
func (r *Reconciler) resolve(ctx context.Context, t *infrav1.TerraformMachineTemplate, image string) (Resolution, *InspectError) {
	var pullSecrets []corev1.LocalObjectReference
	if j := t.Spec.Template.Spec.Jobs; j != nil {
		pullSecrets = j.ImagePullSecrets
	}
	// The ServiceAccount a machine made from the template runs its Jobs as
	// when it sets one (spec.jobs.serviceAccountName), else captf-runner:
	// the kubelet adds that account's image pull Secrets to the pod's.
	sa := identity.ServiceAccountFor(&infrav1.TerraformMachine{Spec: t.Spec.Template.Spec}, nil)
	secretsCtx, cancel := context.WithTimeout(ctx, r.Timeout)
	kc, err := Keychain(secretsCtx, r.Live, t.Namespace, sa, pullSecrets)
	cancel()
	if err != nil {
		return Resolution{}, asInspectError(err)
	}
	labels, err := r.Inspector.Labels(ctx, image, kc)
	if err != nil {
		return Resolution{}, asInspectError(err)
	}
	return Resolve(image, labels), nil
}

func asInspectError(err error) *InspectError {
	var ie *InspectError
	if errors.As(err, &ie) {
		return ie
	}
	return &InspectError{Reason: metrics.InspectRegistry, Err: err}
}

// apply writes the outcome onto the template's status. A failed inspection
// keeps the capacity already resolved, which capacitySource still names;
// any other outcome replaces it.
func apply(t *infrav1.TerraformMachineTemplate, res Resolution, ie *InspectError, image string) {
	cond := metav1.Condition{
		Type:               infrav1.CapacityResolvedCondition,
		ObservedGeneration: t.Generation,
	}
	if ie != nil {
		cond.Status = metav1.ConditionFalse
		cond.Reason = infrav1.ImageInspectFailedReason
		cond.Message = limit(ie.Error())
		meta.SetStatusCondition(&t.Status.Conditions, cond)
		return
	}
	cond.Reason = res.Reason
	cond.Message = limit(res.Message)
	cond.Status = metav1.ConditionTrue
	if res.Reason == infrav1.CapacityLabelInvalidReason {
		cond.Status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&t.Status.Conditions, cond)
	t.Status.Capacity = res.Capacity
	t.Status.NodeInfo = res.NodeInfo
	t.Status.CapacitySource = &infrav1.CapacitySource{Image: image}
}

// report emits the events and counts the failures of one resolution, once
// per transition.
func (r *Reconciler) report(log logr.Logger, t *infrav1.TerraformMachineTemplate, prev *metav1.Condition, before *infrav1.TerraformMachineTemplateStatus, res Resolution, ie *InspectError) {
	prevReason := ""
	if prev != nil {
		prevReason = prev.Reason
	}
	if ie != nil {
		log.Info("Reading the image's capacity labels failed", "reason", ie.Reason, "error", limit(ie.Error()))
		if prevReason != infrav1.ImageInspectFailedReason {
			metrics.ImageInspectError(ie.Reason)
			r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, infrav1.ImageInspectFailedEvent, eventAction, "%s", limit(ie.Error()))
		}
		return
	}
	if res.Reason == infrav1.CapacityLabelInvalidReason && prevReason != infrav1.CapacityLabelInvalidReason {
		metrics.ImageInspectError(metrics.InspectLabel)
		log.Info("The image's capacity labels are invalid", "message", res.Message)
	}
	changed := !equality.Semantic.DeepEqual(before.Capacity, t.Status.Capacity) ||
		!equality.Semantic.DeepEqual(before.NodeInfo, t.Status.NodeInfo)
	if changed {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, infrav1.CapacityResolvedEvent, eventAction,
			"%s", limit(fmt.Sprintf("%s from image %s", Describe(t.Status.Capacity, t.Status.NodeInfo), t.Spec.Template.Spec.Source.Image)))
	}
}

// limit keeps a condition message or event note within maxMessage bytes.
func limit(s string) string { return shorten(s, maxMessage) }

// shorten cuts s to at most n bytes, ending it with "..." when it was cut,
// without splitting a UTF-8 sequence.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Truncate(s, n-len("...")) + "..."
}
