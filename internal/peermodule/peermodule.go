package peermodule

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The peer's provider module and the release dovetail follows.
const (
	Module  = "github.com/aws/karpenter-provider-aws"
	Version = "v1.15.2"
)

// Files runs `go mod download -json Module@Version` in dir and returns the
// module's files under prefix (a folder such as "pkg/apis/crds/"), by path
// below it. The module's go.mod asks for a newer Go than may be installed,
// in which case `go mod download` reports an error after fetching the zip;
// the zip is read directly. The error says why the files could not be had.
func Files(dir, prefix string) (map[string][]byte, error) {
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
	root := Module + "@" + Version + "/" + prefix
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, root)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
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
	if len(files) == 0 {
		return nil, fmt.Errorf("%s@%s has no files under %s", Module, Version, prefix)
	}
	return files, nil
}

// ChartDir is where UnpackChart puts the peer's chart below its dst.
const ChartDir = "karpenter"

// UnpackChart writes the peer's Helm chart (charts/karpenter of the module)
// into dst/karpenter and returns that directory, for `helm template`.
func UnpackChart(dst string) (string, error) {
	files, err := Files(dst, "charts/"+ChartDir+"/")
	if err != nil {
		return "", err
	}
	root := filepath.Join(dst, ChartDir)
	for name, b := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			return "", fmt.Errorf("chart file %q leaves the chart", name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
	}
	if _, ok := files["values.yaml"]; !ok {
		return "", fmt.Errorf("%s@%s: charts/%s has no values.yaml", Module, Version, ChartDir)
	}
	return root, nil
}
