//go:build tools

// Package tools pins the HashiCorp Terraform runtime packaged into CAPTF's
// module images next to OpenTofu (v1.5.7, the last release under the MPL).
package tools

import _ "github.com/hashicorp/terraform"
