package peercrds

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// The peer's provider module and the release dovetail's API follows.
const (
	Module  = "github.com/aws/karpenter-provider-aws"
	Version = "v1.15.2"
)

// Files are the peer CRD files the API is compared with: every CRD the
// peer's chart installs.
var Files = []string{
	"karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml",
	"karpenter.sh_nodeoverlays.yaml", "autoscaling.x-k8s.io_capacitybuffers.yaml",
}

// Fetch runs `go mod download -json Module@Version` in dir and returns the
// module's pkg/apis/crds/*.yaml files by name. The module's go.mod asks for
// a newer Go than may be installed, in which case `go mod download`
// reports an error after fetching the zip; the zip is read directly. The
// error says why the files could not be had.
func Fetch(dir string) (map[string][]byte, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, runErr := cmd.Output()
	var info struct{ Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("go mod download %s@%s: %v (%v)", Module, Version, err, runErr)
	}
	zr, err := zip.OpenReader(info.Zip)
	if err != nil {
		return nil, fmt.Errorf("fetching %s@%s: %s: %w", Module, Version, info.Error, err)
	}
	defer zr.Close()
	files := map[string][]byte{}
	prefix := Module + "@" + Version + "/pkg/apis/crds/"
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	for _, n := range Files {
		if files[n] == nil {
			return nil, fmt.Errorf("%s@%s has no pkg/apis/crds/%s", Module, Version, n)
		}
	}
	return files, nil
}
