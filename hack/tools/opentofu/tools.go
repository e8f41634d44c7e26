//go:build tools

// Package tools pins the OpenTofu runtime packaged into CAPTF's module images.
package tools

import _ "github.com/opentofu/opentofu/cmd/tofu"
