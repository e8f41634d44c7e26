package capi

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
)

func TestWebhookConfigsPointEveryWebhookAtTheLoopbackServer(t *testing.T) {
	dir, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, manifest := range []string{
		"core/config/webhook/manifests.yaml",
		"bootstrap/kubeadm/config/webhook/manifests.yaml",
		"controlplane/kubeadm/config/webhook/manifests.yaml",
	} {
		t.Run(manifest, func(t *testing.T) {
			mutating, validating, err := admission.Configs(filepath.Join(dir, manifest), "p", 9443, []byte("CA"))
			if err != nil {
				t.Fatal(err)
			}
			if len(mutating)+len(validating) == 0 {
				t.Fatal("no webhook configuration read")
			}
			check := func(cfgName, hook string, url *string, ca []byte) {
				t.Helper()
				if !strings.HasPrefix(cfgName, "p-") {
					t.Errorf("configuration %s not prefixed", cfgName)
				}
				if url == nil || !strings.HasPrefix(*url, "https://127.0.0.1:9443/") || string(ca) != "CA" {
					t.Errorf("webhook %s: url %v, caBundle %q", hook, url, ca)
				}
			}
			for _, c := range mutating {
				for _, w := range c.Webhooks {
					check(c.Name, w.Name, w.ClientConfig.URL, w.ClientConfig.CABundle)
					if w.ClientConfig.Service != nil {
						t.Errorf("webhook %s still names a Service", w.Name)
					}
				}
			}
			for _, c := range validating {
				for _, w := range c.Webhooks {
					check(c.Name, w.Name, w.ClientConfig.URL, w.ClientConfig.CABundle)
					if w.ClientConfig.Service != nil {
						t.Errorf("webhook %s still names a Service", w.Name)
					}
				}
			}
		})
	}
}
