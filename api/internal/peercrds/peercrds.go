package peercrds

import (
	"fmt"
	"strings"

	"github.com/dovetail-sh/dovetail/internal/peermodule"
)

// The peer's provider module and the release dovetail's API follows.
const (
	Module  = peermodule.Module
	Version = peermodule.Version
)

// Files are the peer CRD files the API is compared with: every CRD the
// peer's chart installs.
var Files = []string{
	"karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml",
	"karpenter.sh_nodeoverlays.yaml", "autoscaling.x-k8s.io_capacitybuffers.yaml",
}

// Fetch returns the peer module's pkg/apis/crds/*.yaml files by name,
// fetched through the Go module proxy from dir (see peermodule.Files).
func Fetch(dir string) (map[string][]byte, error) {
	all, err := peermodule.Files(dir, "pkg/apis/crds/")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for name, b := range all {
		if !strings.Contains(name, "/") {
			files[name] = b
		}
	}
	for _, n := range Files {
		if files[n] == nil {
			return nil, fmt.Errorf("%s@%s has no pkg/apis/crds/%s", Module, Version, n)
		}
	}
	return files, nil
}
