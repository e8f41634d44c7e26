//go:build tools

// Package tools pins libraries CAPTF is built on before every one of them is
// imported by production code, so the module graph stays stable.
package tools

import (
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/terraform-json"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/component-base/metrics"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta2"
	_ "sigs.k8s.io/cluster-api/util/conditions"
	_ "sigs.k8s.io/cluster-api/util/patch"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
)
