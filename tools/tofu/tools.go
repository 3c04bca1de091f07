//go:build tools

// Package tools records the OpenTofu command this module builds, so that
// `go mod tidy` keeps it in the module graph.
package tools

import (
	_ "github.com/opentofu/opentofu/cmd/tofu"
)
