package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dovetail-sh/dovetail/pkg/local"
)

// Up starts the stack in-process; Close stops it.
func ExampleUp() {
	dir, err := os.MkdirTemp("", "dovetail-local-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := local.Up(context.Background(), local.Options{
		Dir:   dir,
		Apply: []string{"testdata/manifests"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	fmt.Println(filepath.Base(s.KubeconfigPath()))
	out, err := s.ControlPlane().Kubectl(context.Background(), "get", "configmap", "greeting", "-n", "demo", "-o", "jsonpath={.data.message}").Output()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output:
	// kubeconfig
	// hello from the local stack
}
