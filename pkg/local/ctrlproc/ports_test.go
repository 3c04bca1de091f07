package ctrlproc

import "testing"

// TestFreePortsAreDistinct: the ports of one replica never coincide (the
// controller refuses a health port equal to its metrics port).
func TestFreePortsAreDistinct(t *testing.T) {
	for range 20 {
		ports, err := freePorts(16)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if p <= 0 || seen[p] {
				t.Fatalf("ports %v: %d repeated or invalid", ports, p)
			}
			seen[p] = true
		}
	}
}
