package controlplane

import (
	"context"
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
}
