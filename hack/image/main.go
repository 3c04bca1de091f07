package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image facts, shared with the test.
const (
	BinaryPath = "/dovetail"
	User       = "65532:65532"
	Source     = "https://github.com/dovetail-sh/dovetail"
)

// Entrypoint runs the controller; `docker run IMAGE version` overrides
// nothing but Cmd, so the entrypoint is the binary and Cmd the command.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"controller"}
	Archs      = []string{"amd64", "arm64"}
)

func main() {
	version := flag.String("version", "dev", "version stamped into the binary and the image labels")
	out := flag.String("out", "bin/image", "OCI layout directory to write (replaced)")
	repo := flag.String("repo", ".", "repository root (where cmd/dovetail lives)")
	flag.Parse()
	start := time.Now()
	if err := Build(*repo, *out, *version, Archs, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "image: wrote %s and %s.tar in %s\n", *out, *out, time.Since(start).Round(time.Second))
}

// Build compiles dovetail for each architecture and writes the image index
// as an OCI layout in out and as a tar of that layout in out+".tar".
func Build(repo, out, version string, archs []string, log io.Writer) error {
	work, err := os.MkdirTemp("", "dovetail-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range archs {
		bin := filepath.Join(work, "dovetail-"+arch)
		fmt.Fprintf(log, "image: building dovetail %s for linux/%s\n", version, arch)
		cmd := exec.Command("go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/dovetail-sh/dovetail/internal/version.Version="+version,
			"-o", bin, "./cmd/dovetail")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOTOOLCHAIN=local")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building linux/%s: %w", arch, err)
		}
		img, err := image(bin, version, arch)
		if err != nil {
			return fmt.Errorf("linux/%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if _, err := layout.Write(out, idx); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	return tarDir(out, out+".tar")
}

// image is one platform's image: an empty base plus one layer holding the
// binary, owned by root and executable by all, run as User.
func image(bin, version, arch string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{
		Name: BinaryPath[1:], Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = v1.Config{
		Entrypoint: Entrypoint,
		Cmd:        Cmd,
		User:       User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "dovetail",
			"org.opencontainers.image.version": version,
			"org.opencontainers.image.source":  Source,
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// tarDir writes dir's files into a tar archive (an oci-archive when dir is
// an OCI layout), in walk order with zero times.
func tarDir(dir, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), time.Unix(0, 0), 0, 0, "", ""
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
