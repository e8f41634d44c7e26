//go:build tools

// Package tools pins the etcd server that backs CAPTF's test control plane.
package tools

import _ "go.etcd.io/etcd/server/v3"
