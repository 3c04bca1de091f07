// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/dovetail-sh/dovetail/internal/version.Version=...".
package version
