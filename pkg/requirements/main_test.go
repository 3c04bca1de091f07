package requirements

import (
	"flag"
	"os"
	"testing"
)

// TestMain raises rapid's default of 100 cases per property to 1000 (a few
// hundred milliseconds in all) unless -rapid.checks is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "1000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
