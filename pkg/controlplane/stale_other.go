//go:build !linux

package controlplane

// ProcessesUsing is only implemented on Linux; elsewhere it finds nothing.
func ProcessesUsing(dir string) []int { return nil }

func killStale(dir, binDir string) {}
