package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// planSecretTimeout bounds writing the plan detail Secret (each request
// has the events' timeout).
const planSecretTimeout = 20 * time.Second

// secretStore reads and writes Secrets of one namespace.
type secretStore interface {
	Get(ctx context.Context, name string) (*corev1.Secret, error)
	Create(ctx context.Context, s *corev1.Secret) error
	Update(ctx context.Context, s *corev1.Secret) error
}

type restSecrets struct {
	client    rest.Interface
	namespace string
}

func (s restSecrets) Get(ctx context.Context, name string) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	err := s.client.Get().Namespace(s.namespace).Resource("secrets").Name(name).Do(ctx).Into(out)
	return out, err
}

func (s restSecrets) Create(ctx context.Context, sec *corev1.Secret) error {
	return s.client.Post().Namespace(s.namespace).Resource("secrets").Body(sec).Do(ctx).Error()
}

func (s restSecrets) Update(ctx context.Context, sec *corev1.Secret) error {
	return s.client.Put().Namespace(s.namespace).Resource("secrets").Name(sec.Name).Body(sec).Do(ctx).Error()
}

// writePlanDetail writes the change list of the plan just read to the
// Secret captf-plan-<job>, owned like the per-run Secret captf-run-<job>
// (by the Job), for the manager to record in a TerraformPlan. It needs
// --job-name and the backend's namespace; it is logged, never fatal,
// when it cannot be written: the manager then records the summary alone.
// Nothing of the detail is logged.
func (r *runState) writePlanDetail(p *tfjson.Plan, a PlanAnalysis) {
	ns, _ := r.o.BackendConfigValue("namespace")
	if r.o.JobName == "" || ns == "" {
		klog.InfoS("Plan detail not written: the run names no Job or namespace")
		return
	}
	store, err := r.secrets(ns)
	if err != nil {
		klog.InfoS("Plan detail not written: no API server client", "err", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), planSecretTimeout)
	defer cancel()
	d := PlanDetail(p, a, RecordBounds)
	if err := storePlanDetail(ctx, store, r.o.JobName, d); err != nil {
		klog.InfoS("Plan detail not written", "secret", result.PlanSecretName(r.o.JobName), "err", err.Error())
		return
	}
	klog.InfoS("Plan detail written", "secret", result.PlanSecretName(r.o.JobName), "resources", len(d.Changes), "omitted", d.Omitted != nil)
}

// storePlanDetail creates (or, on a retried pod, replaces) the Job's plan
// detail Secret with the owner references of its per-run Secret.
func storePlanDetail(ctx context.Context, store secretStore, job string, d *result.PlanDetail) error {
	run, err := store.Get(ctx, result.RunSecretPrefix+job)
	if err != nil {
		return fmt.Errorf("reading the per-run Secret for its owners: %w", err)
	}
	if len(run.OwnerReferences) == 0 {
		return errors.New("the per-run Secret has no owner to give the plan detail")
	}
	data, err := result.EncodePlanDetail(d)
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            result.PlanSecretName(job),
			Namespace:       run.Namespace,
			OwnerReferences: run.OwnerReferences,
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{result.PlanDetailKey: data},
	}
	err = store.Create(ctx, s)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := store.Get(ctx, s.Name)
	if err != nil {
		return err
	}
	cur.Data, cur.OwnerReferences = s.Data, s.OwnerReferences
	return store.Update(ctx, cur)
}

// secrets is a core/v1 client of Secrets in ns through the events
// client's configuration.
func (r *runState) secrets(ns string) (secretStore, error) {
	if r.secretStore != nil {
		return r.secretStore, nil
	}
	cfg, err := eventsConfig(r.o)
	if err != nil {
		return nil, err
	}
	rc, err := restClient(cfg, corev1.SchemeGroupVersion, corev1.AddToScheme, "/api")
	if err != nil {
		return nil, err
	}
	return restSecrets{client: rc, namespace: ns}, nil
}
