//go:build chaos

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// throttled is how long the throttling scenario's manager is answered 429.
const throttled = 60 * time.Second

// TestFaultManagerThrottled has the API server's priority and fairness
// throttle the manager with 429 Too Many Requests from its start through
// its bring-up, at least a minute: the manager runs as a user of its own
// (impersonated, bound to cluster-admin), which a FlowSchema sends to a
// priority level with no seat and the Reject response, so that only one
// of its requests runs at a time and every other is refused. The scenario
// holds the machine's apply, checks that the manager got that far while
// throttled, and lets it go. The manager backs off (its request rate is
// measured), loses no write and books each Job once; the bring-up
// converges once the FlowSchema is gone.
func TestFaultManagerThrottled(t *testing.T) {
	t.Parallel()
	const user = "captf-fault-throttled"
	b := newFaultBringUp(t, 49, 1, 0)
	b.holdRuns("TerraformMachine")
	ctx := faultContext(t)
	c := b.w.c
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	// No seat, and Reject: a request the FlowSchema matches runs only
	// while no other does, and is answered 429 otherwise.
	level := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](0),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	schema := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: user},
			MatchingPrecedence:         50,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	b.w.create(ctx, binding, level, schema)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), schema)
		_ = c.Delete(context.Background(), level)
		_ = c.Delete(context.Background(), binding)
	})
	cfg := rest.CopyConfig(b.w.e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The API server applies a new FlowSchema a moment later: the
	// throttling is in force once one of a burst of requests as the
	// manager's user is answered 429.
	probe, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.w.eventually(ctx, 2*time.Minute, "a burst of requests as the manager's user to be answered 429", func() (bool, string) {
		codes := make(chan int, 16)
		for range cap(codes) {
			go func() {
				code := 0
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+b.ns+"/configmaps", nil)
				if err == nil {
					if resp, err := probe.Do(req); err == nil {
						code = resp.StatusCode
						_ = resp.Body.Close()
					}
				}
				codes <- code
			}()
		}
		refused := 0
		for range cap(codes) {
			if <-codes == http.StatusTooManyRequests {
				refused++
			}
		}
		return refused > 0, fmt.Sprintf("%d of %d answered 429", refused, cap(codes))
	})

	f := &framework.Faults{Names: b.names()}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	o := managerOptions(b.w.images.Runner)
	o.Namespace, o.WebhookPort = b.ns, 0
	start := time.Now()
	go func() {
		done <- framework.RunObservedManager(mctx, b.w.e, o, framework.Observe{Config: cfg, Wrap: f.Wrap})
	}()
	t.Cleanup(func() { mcancel(); <-done })
	b.apply(ctx)
	held := b.heldRun(ctx, "apply")
	t.Logf("throttled from its start (FlowSchema %s), the manager started Job %s in %v, %d of its requests answered 429 so far; released",
		schema.Name, held.job.Name, time.Since(start).Round(time.Second), f.Codes()[http.StatusTooManyRequests])
	b.hold.Release()
	time.Sleep(time.Until(start.Add(throttled)))
	codes := f.Codes()
	if err := c.Delete(ctx, schema); err != nil {
		t.Fatal(err)
	}
	window := time.Since(start).Seconds()
	sent, refused := 0, codes[http.StatusTooManyRequests]
	for _, n := range codes {
		sent += n
	}
	rate := float64(sent) / window
	t.Logf("throttled for %.0fs: the manager sent %d requests (%.1f/s), %d answered 429", window, sent, rate, refused)
	if rate > maxCutRate {
		t.Errorf("the throttled manager sent %.1f requests/s, want at most %d: a retry loop without backoff", rate, maxCutRate)
	}
	if refused == 0 {
		t.Error("no request of the manager was answered 429 while it was throttled")
	}
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}
