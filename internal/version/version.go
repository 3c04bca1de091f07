package version

import "runtime/debug"

// Version is the dovetail release; "dev" for untagged builds.
var Version = "dev"

// Commit is the VCS revision the binary was built from, as the Go
// toolchain stamped it ("" when it was not built from a checkout, as in
// tests).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
