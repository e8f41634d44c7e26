//go:build tools

// Package tools pins promtool, Prometheus's rule checker and rule unit-test
// runner, which make promtool-check, make promtool-test and the config tests
// run over CAPTF's alerts.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
