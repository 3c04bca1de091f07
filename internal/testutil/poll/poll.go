package poll

import (
	"testing"
	"time"
)

// Until polls cond every interval until it returns true with no error,
// failing t after timeout with what and cond's last error. An error from
// cond means "not yet", not a failure.
func Until(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		<-tick.C
	}
}

// While checks cond every interval for d, failing t at the first check
// that does not hold.
func While(t testing.TB, d, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if ok, err := cond(); !ok || err != nil {
			t.Fatalf("%s stopped holding (error: %v)", what, err)
		}
		<-tick.C
	}
}

// Bool adapts a condition without an error to Until and While.
func Bool(cond func() bool) func() (bool, error) {
	return func() (bool, error) { return cond(), nil }
}
