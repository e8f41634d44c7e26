//go:build tools

// Package tools pins staticcheck, the linter make verify runs over CAPTF.
package tools

import (
	_ "honnef.co/go/tools/cmd/staticcheck"
)
