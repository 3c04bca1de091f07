package version

// Version is the dovetail release; "dev" for untagged builds.
var Version = "dev"
