package controllers_test

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A controller imports no other controller: what two controllers share
// lives in a shared package (nodeclaimutil, singleton, controllerstest for
// tests) or a pure package outside pkg/controllers, and only this package
// wires controllers together. Nor does it import the operator's cache
// trimming (pods are listed through nodeclaimutil).
func TestControllersDoNotImportEachOther(t *testing.T) {
	const prefix = "github.com/dovetail-sh/dovetail/pkg/controllers/"
	shared := map[string]bool{"nodeclaimutil": true, "singleton": true, "controllerstest": true}
	checked := 0
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || dir == "." {
			return err
		}
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		self := filepath.ToSlash(dir)
		if shared[strings.SplitN(self, "/", 2)[0]] {
			return nil
		}
		checked++
		for _, imp := range pkg.Imports {
			if imp == "github.com/dovetail-sh/dovetail/pkg/operator/cachetrim" {
				t.Errorf("controller package %s imports %s", self, imp)
			}
			other, ok := strings.CutPrefix(imp, prefix)
			if !ok || other == self || strings.HasPrefix(other, self+"/") || shared[strings.SplitN(other, "/", 2)[0]] {
				continue
			}
			t.Errorf("controller package %s imports controller package %s", self, other)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d controller packages; the walk missed them", checked)
	}
}
