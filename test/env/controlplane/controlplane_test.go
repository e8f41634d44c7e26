package controlplane

import (
	"context"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStart_APIServerOnlyServesWithAdminKubeconfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion == "v0.0.0-master" || v.GitVersion == "" {
		t.Errorf("server version %q is not a pinned release", v.GitVersion)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC is on: a request without credentials (system:anonymous) is refused.
	anon := *cfg
	anon.TLSClientConfig.CertData, anon.TLSClientConfig.KeyData = nil, nil
	acs, err := kubernetes.NewForConfig(&anon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acs.CoreV1().Secrets("n1").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("request without credentials was allowed")
	}

	// The fault scenarios restart the API server and stop and start etcd:
	// the same clients go on, and nothing stored is lost.
	apiPid := cp.APIServer.Pid()
	if err := cp.RestartAPIServer(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if cp.APIServer.Pid() == apiPid {
		t.Fatal("the API server was not restarted")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the API server restarted: %v", err)
	}
	if err := cp.StopEtcd(time.Second); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	_, err = cs.CoreV1().Namespaces().Create(short, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{})
	cancelShort()
	if err == nil {
		t.Fatal("a write succeeded with etcd stopped")
	}
	if err := cp.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("after etcd started again: %v", err)
	}
}

func TestStart_RetriesWhenAPortIsTakenMeanwhile(t *testing.T) {
	// The first API server port handed out is held by someone else.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 3 { // etcd client, etcd peer, then the API server
			return taken.Addr().(*net.TCPAddr).Port, nil
		}
		return FreePort()
	}
	defer func() { pickPort = FreePort }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	if cp.Port == taken.Addr().(*net.TCPAddr).Port || calls < 6 {
		t.Fatalf("start was not retried on fresh ports (port %d, %d ports picked)", cp.Port, calls)
	}
}
