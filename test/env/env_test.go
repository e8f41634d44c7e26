package env_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
)

func TestStart_APIServerOnlyWithManagerHooks(t *testing.T) {
	out := filepath.Join(t.TempDir(), "manager-kubeconfig")
	hookStopped := make(chan error, 1)
	var hookEnv *env.Env
	e, err := env.Start(context.Background(), env.Options{
		Logger: testLogger,
		Manager: func(ctx context.Context, e *env.Env) error {
			hookEnv = e
			<-ctx.Done()
			hookStopped <- ctx.Err()
			return ctx.Err()
		},
		ManagerCommand: []string{"/bin/sh", "-c", `echo "$KUBECONFIG" > ` + out + `; exec sleep 300`},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := e.Dir
	if _, err := e.Clientset.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "light"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e.Kubelet != nil || e.CAPI != nil || e.Registry != "" || e.ControlPlane.ControllerManager != nil {
		t.Errorf("the zero Options started more than etcd and kube-apiserver")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		if strings.TrimSpace(string(b)) == e.KubeconfigPath {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("manager process did not get KUBECONFIG=%s (got %q)", e.KubeconfigPath, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pids := e.Pids()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if hookEnv != e {
		t.Errorf("manager hook did not receive the environment")
	}
	select {
	case err := <-hookStopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("manager hook context ended with %v", err)
		}
	default:
		t.Errorf("Stop returned before the manager hook")
	}
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); !strings.Contains(string(b), ") Z ") {
				t.Errorf("process %d still runs after Stop", pid)
			}
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data folder %s not removed: %v", dir, err)
	}
	if err := e.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// BenchmarkStart measures a warm start (binaries cached) and stop of the
// environment in its modes; run with -benchtime=1x.
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts env.Options
	}{
		{"apiserver", env.Options{}},
		{"controller-manager", env.Options{ControllerManager: true}},
		{"full", env.Options{CAPI: true, Kubelet: true, Registry: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.opts.Logger = testLogger
				e, err := env.Start(context.Background(), bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				total, _, err := e.RSS()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(total>>20), "MiB-RSS")
				if err := e.Stop(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
