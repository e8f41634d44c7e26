//go:build tools

// Package tools pins Vale, the prose linter make lint-docs-prose runs over
// the book (docs/vale holds its configuration and CAPTF's style).
package tools

import (
	_ "github.com/vale-cli/vale/v3/cmd/vale"
)
