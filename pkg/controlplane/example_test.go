package controlplane_test

import (
	"context"
	"fmt"
)

// The package's tests share one control plane started in TestMain; the
// pinned kubectl talks to it as admin.
func ExampleControlPlane_Kubectl() {
	out, err := cp.Kubectl(context.Background(), "get", "namespace", "kube-system", "-o", "name").Output()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output: namespace/kube-system
}
