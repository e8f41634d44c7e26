//go:build tools

// Package tools pins the third-party provider CAPTF's tests put into a
// module image's /captf/providers mirror: the OpenStack provider, built
// from its Go module.
package tools

import _ "github.com/terraform-provider-openstack/terraform-provider-openstack/v3"
