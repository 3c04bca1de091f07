package main

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layoutDir is the image the tests check: $DOVETAIL_IMAGE_LAYOUT (what
// `make image` wrote), else one built here once.
func layoutDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("DOVETAIL_IMAGE_LAYOUT"); dir != "" {
		return dir
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dovetail-image-test-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "image")
		var log bytes.Buffer
		if err := Build("../..", built, "0.0.0-test", Archs, &log); err != nil {
			buildErr = err
			built = log.String()
		}
	})
	if buildErr != nil {
		t.Fatalf("building the image: %v\n%s", buildErr, built)
	}
	return built
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" && buildErr == nil {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// files lists a layer's entries and returns the binary's bytes.
func files(t *testing.T, l v1.Layer) ([]string, []byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	var bin []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if "/"+h.Name == BinaryPath {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s is not executable (mode %o)", h.Name, h.Mode)
			}
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return names, bin
}

// TestImageIndex: both architectures, each an empty base plus one layer
// holding only the static binary, run as non-root with the controller as
// its entrypoint.
func TestImageIndex(t *testing.T) {
	dir := layoutDir(t)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			t.Fatalf("manifest %s has platform %v", d.Digest, d.Platform)
		}
		arch := d.Platform.Architecture
		archs = append(archs, arch)
		t.Run(arch, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Architecture != arch || cfg.OS != "linux" {
				t.Errorf("config says %s/%s", cfg.OS, cfg.Architecture)
			}
			c := cfg.Config
			if c.User != User || strings.HasPrefix(c.User, "0") || c.User == "root" {
				t.Errorf("user %q, want %s (non-root)", c.User, User)
			}
			if !reflect.DeepEqual(c.Entrypoint, []string{"/dovetail"}) || !reflect.DeepEqual(c.Cmd, []string{"controller"}) {
				t.Errorf("entrypoint %v cmd %v, want [/dovetail] [controller]", c.Entrypoint, c.Cmd)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != 1 {
				t.Fatalf("%d layers, want 1 on an empty base", len(layers))
			}
			names, bin := files(t, layers[0])
			if !reflect.DeepEqual(names, []string{"dovetail"}) {
				t.Errorf("the image holds %v, want only the binary (no shell, no libc)", names)
			}
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("the binary is not ELF: %v", err)
			}
			want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
			if f.Machine != want {
				t.Errorf("the binary is for %v, want %v", f.Machine, want)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the binary is dynamically linked (it has an interpreter); the image has no libc")
				}
			}
			if size, err := img.Size(); err == nil {
				t.Logf("linux/%s manifest %d bytes; layer compressed size:", arch, size)
			}
			if sz, err := layers[0].Size(); err == nil {
				t.Logf("  %.1f MiB", float64(sz)/(1<<20))
			}
		})
	}
	if !reflect.DeepEqual(archs, []string{"amd64", "arm64"}) {
		t.Errorf("the index holds %v, want amd64 and arm64", archs)
	}
	if _, err := os.Stat(dir + ".tar"); err != nil {
		t.Errorf("no archive of the layout: %v", err)
	}
}

// TestBinaryVerifiesTLS runs the image's binary for this machine as the
// controller against an HTTPS endpoint: it reaches the endpoint when the
// endpoint's CA is trusted, and refuses the certificate when it is not,
// with no system CA bundle (as in the image), where the embedded roots are
// all it has.
func TestBinaryVerifiesTLS(t *testing.T) {
	dir := layoutDir(t)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := idx.IndexManifest()
	var bin []byte
	for _, d := range m.Manifests {
		if d.Platform.Architecture == runtime.GOARCH {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			layers, _ := img.Layers()
			_, bin = files(t, layers[0])
		}
	}
	if bin == nil {
		t.Fatalf("the image has no linux/%s binary to run here", runtime.GOARCH)
	}
	work := t.TempDir()
	exe := filepath.Join(work, "dovetail")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "version", "-m", exe).CombinedOutput(); err != nil || !strings.Contains(string(out), "golang.org/x/crypto/x509roots/fallback") {
		t.Errorf("the binary does not embed the fallback CA roots (go version -m: %v)\n%s", err, out)
	}

	caPEM, serverCert := testPKI(t)
	caFile := filepath.Join(work, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"__type":"AccessDeniedException","message":"test endpoint"}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}}
	srv.StartTLS()
	defer srv.Close()
	// The API server is the test endpoint, named without a CA, so the
	// client verifies it with the roots the binary finds on the system
	// (SSL_CERT_FILE, SSL_CERT_DIR) or, with none there, its embedded ones:
	// what it does for AWS's endpoints in the image.
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '"+srv.URL+"'}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyDir := t.TempDir()
	run := func(certFile string) string {
		cmd := exec.Command(exe, "controller", "--cluster-name", "tls-check", "--kubeconfig", kubeconfig,
			"--leader-elect=false", "--metrics-port", "-1", "--health-probe-port", "-1")
		cmd.Env = []string{
			"AWS_ENDPOINT_URL=" + srv.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
			"AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=1",
			"SSL_CERT_FILE=" + certFile, "SSL_CERT_DIR=" + emptyDir, "HOME=" + work,
		}
		done := make(chan struct{})
		var out []byte
		go func() { out, _ = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the controller did not exit within a minute:\n%s", out)
		}
		return string(out)
	}

	out := run(filepath.Join(emptyDir, "none.pem"))
	if hits.Load() != 0 || !strings.Contains(out, "x509") {
		t.Errorf("with no trusted CA the binary reached the endpoint %d times; want a refused certificate:\n%s", hits.Load(), out)
	}
	out = run(caFile)
	if hits.Load() == 0 {
		t.Errorf("with the endpoint's CA trusted the binary did not reach it:\n%s", out)
	}
}

// testPKI makes a CA and a server certificate for 127.0.0.1 signed by it.
func testPKI(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dovetail image test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
}
