package jobs

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// warnings collects the API server's warnings (for example about a
// repeated env name), which a Job CAPTF builds must not cause.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// TestAPIServerAcceptsJobAndRunSecret creates the Jobs Build returns, and
// their per-run Secrets, on a real API server: the server's own validation
// accepts them without a warning, and what it stores is what was built.
func TestAPIServerAcceptsJobAndRunSecret(t *testing.T) {
	env, cfg, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Log(err)
		}
	})
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}); err != nil {
		t.Fatal(err)
	}

	restore := testRun()
	restore.Op = infrav1.OperationRestore
	restore.JobName = "captf-c-prod-restore-a1-0a1b2c"
	restore.GuardDeletes = false
	restore.Inputs = Inputs{}
	restore.Restore = &Restore{Serial: 9, Chunks: [][]byte{[]byte("\x1f\x8bchunk-0"), []byte("chunk-1")}, Resources: 4}

	withEnv := testRun()
	withEnv.JobName = "captf-c-prod-apply-a2-3d4e5f"
	p := Effective(&infrav1.JobPolicy{
		Env:              []corev1.EnvVar{{Name: "TMPDIR", Value: "/captf/work/tmp"}, {Name: "TF_LOG", Value: "TRACE"}, {Name: "AWS_REGION", Value: "eu-west-1"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}, nil)
	withEnv.Policy = &p

	for name, r := range map[string]*Run{"apply": testRun(), "restore": restore, "apply with user env": withEnv} {
		t.Run(fmt.Sprintf("the %s Job and its per-run Secret", name), func(t *testing.T) {
			w.mu.Lock()
			w.list = nil
			w.mu.Unlock()
			job, _ := mustBuild(t, r)
			built := job.DeepCopy()
			if err := c.Create(ctx, job); err != nil {
				t.Fatalf("creating the Job: %v", err)
			}
			if job.UID == "" {
				t.Fatal("created Job has no UID")
			}
			sec, err := RunSecret(r, job)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, sec); err != nil {
				t.Fatalf("creating the per-run Secret: %v", err)
			}
			if len(w.list) > 0 {
				t.Errorf("API server warnings: %q", w.list)
			}
			stored := source(job)
			want := source(built)
			if fmt.Sprint(stored.Args) != fmt.Sprint(want.Args) || fmt.Sprint(stored.Env) != fmt.Sprint(want.Env) {
				t.Errorf("stored container differs from the built one")
			}
			if job.Spec.Template.Spec.Volumes[3].Secret.SecretName != sec.Name {
				t.Errorf("config volume names %s, Secret is %s", job.Spec.Template.Spec.Volumes[3].Secret.SecretName, sec.Name)
			}
			got := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(sec), got); err != nil {
				t.Fatal(err)
			}
			if got.OwnerReferences[0].UID != job.UID || got.Immutable == nil || !*got.Immutable {
				t.Errorf("stored Secret = %+v", got.ObjectMeta)
			}
			got.Data[contract.MainFile] = []byte("changed")
			if err := c.Update(ctx, got); err == nil {
				t.Error("the per-run Secret could be changed under its Job")
			}
		})
	}
}
