package scale

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// A hostile tenant (Security Model): one who may write Secrets in the
// fleet's namespace and publishes a module image. It labels large Secrets
// captf.io/managed=true, some of them with the backend's state labels for
// objects that do not exist, and runs one TerraformMachine whose module
// writes a gzip bomb: a state of a few hundred KiB whose outputs expand to
// tens of MiB, within the reader's decompressed cap.

// BombMachine is the hostile tenant's TerraformMachine; it is not part of
// the fleet the harness waits for.
const BombMachine = "tenant-bomb"

// hostileSecretBytes is the data of each hostile Secret, as near 1 MiB as
// a Secret holds.
const hostileSecretBytes = 1_000_000

// bombOutputBytes is the size of the bomb state's one large output.
const bombOutputBytes = 48 << 20

// createHostileSecrets creates n Secrets of hostileSecretBytes labeled
// captf.io/managed=true in the fleet's namespace, one in five also carrying
// the backend's state labels for a suffix no object has.
func createHostileSecrets(ctx context.Context, c client.Client, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs <- create(ctx, c, hostileSecret(i))
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("failed to create the hostile tenant's Secrets: %w", err)
		}
	}
	return nil
}

func hostileSecret(i int) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: fmt.Sprintf("tenant-blob-%04d", i),
			Labels: map[string]string{infrav1.ManagedLabel: "true"}},
		// Varied bytes: a Secret of one repeated byte would cost the API
		// server and the cache no less, but vary anyway so no layer can
		// share them.
		Data: map[string][]byte{"blob": bytes.Repeat([]byte(fmt.Sprintf("%08d", i)), hostileSecretBytes/8)},
	}
	if i%5 == 0 {
		suffix, _ := state.Suffix(Namespace, infrav1.KindTerraformMachine, fmt.Sprintf("no-such-machine-%d", i))
		s.Name = state.SecretName(suffix)
		s.Labels[state.BackendStateLabel] = "true"
		s.Labels[state.BackendSuffixLabel] = suffix
		s.Labels[state.BackendWorkspaceLabel] = state.Workspace
		s.Data = map[string][]byte{state.DataKey: s.Data["blob"]}
	}
	return s
}

// bombOutput is the bomb state's large output value.
func bombOutput() string { return strings.Repeat("b", bombOutputBytes) }
