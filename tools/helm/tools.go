//go:build tools

// Package tools records the Helm command this module builds, so that
// `go mod tidy` keeps it in the module graph.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
