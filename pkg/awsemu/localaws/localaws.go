package localaws

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/kubenode"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// EnvFile is the name, in the stack's directory, of the file that tells AWS
// clients where the emulator is.
const EnvFile = "aws.env"

// TokenFile is the name, in the stack's directory, of the file holding the
// emulator's admin token (mode 0600, readable by the stack's user only),
// which `dovetail local fault|interrupt|publish-image` send. It is not in
// EnvFile, which AWS clients source and which is world-readable.
const TokenFile = "aws-admin-token"

// Variables written to EnvFile.
const (
	VarEndpoint          = "AWS_ENDPOINT_URL"
	VarRegion            = "AWS_REGION"
	VarDefaultRegion     = "AWS_DEFAULT_REGION"
	VarAccessKeyID       = "AWS_ACCESS_KEY_ID"
	VarSecretAccessKey   = "AWS_SECRET_ACCESS_KEY"
	VarClusterName       = "DOVETAIL_CLUSTER_NAME"
	VarInterruptionQueue = "DOVETAIL_INTERRUPTION_QUEUE"
)

// serviceCIDR is the local control plane's service range (package
// controlplane), which EKS DescribeCluster reports.
const serviceCIDR = "10.96.0.0/16"

// Component runs the AWS emulator and its node booter as part of the local
// stack: it starts after the control plane, points EKS DescribeCluster at
// the control plane, boots a Node for every running instance and writes
// DIR/aws.env.
type Component struct {
	// TimeScale multiplies every emulated delay (see awsemu.Options).
	TimeScale float64
	// Seed seeds the emulator.
	Seed int64
	// Region is the emulated region; awsemu.DefaultRegion when empty.
	Region string
	// Zones is how many of the region's zones the emulated VPC has a
	// subnet in (awsemu.Options.Zones): 1 to the region's zone count, 0
	// for awsemu.DefaultZones (3, or every zone of a region with fewer).
	Zones int

	emu    *awsemu.Emulator
	booter *kubenode.Booter
	cancel context.CancelFunc
	log    *os.File
	env    string
	token  string
}

var _ stack.Component = (*Component)(nil)

// New returns the component with its defaults.
func New() *Component { return &Component{TimeScale: 1} }

// Name implements stack.Component.
func (c *Component) Name() string { return "aws-emulator" }

// AddFlags registers the component's flags on `local up`.
func (c *Component) AddFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&c.TimeScale, "time-scale", c.TimeScale, "multiply the AWS emulator's delays (instance boot, spot notice, ...) by this factor")
	fs.Int64Var(&c.Seed, "aws-seed", c.Seed, "seed of the AWS emulator's ids, addresses and boot jitter")
	fs.StringVar(&c.Region, "aws-region", awsemu.DefaultRegion, "region the AWS emulator serves")
	fs.IntVar(&c.Zones, "zones", c.Zones, fmt.Sprintf("zones of the region the AWS emulator's VPC has a subnet in, 1 to the region's zone count (default %d, or every zone of a region with fewer)", awsemu.DefaultZones))
}

// Validate checks the component's settings before anything starts; its
// errors name the flags of AddFlags.
func (c *Component) Validate() error {
	if !(c.TimeScale > 0) {
		return fmt.Errorf("--time-scale %v: must be a positive number", c.TimeScale)
	}
	if c.Zones == 0 {
		return nil
	}
	region := c.Region
	if region == "" {
		region = awsemu.DefaultRegion
	}
	cat, err := awsemu.BuiltinCatalog()
	if err != nil {
		return err
	}
	have := len(cat.Zones(region))
	if have == 0 {
		return fmt.Errorf("--aws-region %s: the built-in catalog has no zones in that region", region)
	}
	if c.Zones < 1 || c.Zones > have {
		return fmt.Errorf("--zones %d is out of range: region %s has %d zones, so --zones must be 1 to %d (without it: %d, or every zone of a region with fewer)",
			c.Zones, region, have, have, awsemu.DefaultZones)
	}
	return nil
}

// Start implements stack.Component.
func (c *Component) Start(ctx context.Context, env stack.Env) error {
	if err := c.Validate(); err != nil {
		return err
	}
	dir := filepath.Join(env.Dir, c.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "emulator.log"))
	if err != nil {
		return err
	}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(logFile, prefix, args) }, funcr.Options{Verbosity: 1, LogTimestamp: true})
	runCtx, cancel := context.WithCancel(context.Background())
	fail := func(err error) error {
		cancel()
		if c.booter != nil {
			c.booter.Close()
		}
		if c.emu != nil {
			_ = c.emu.Close()
		}
		logFile.Close()
		return err
	}
	c.emu, err = awsemu.Start(runCtx, awsemu.Options{
		ClusterName: env.ClusterName, Region: c.Region, Zones: c.Zones, TimeScale: c.TimeScale, Seed: c.Seed,
		ServiceCIDR: serviceCIDR, Log: log.WithName("emulator"),
	})
	if err != nil {
		return fail(err)
	}
	cfg := env.ControlPlane.RESTConfig()
	ca, err := caPEM(cfg)
	if err != nil {
		return fail(err)
	}
	c.emu.SetCluster(cfg.Host, ca)
	c.booter, err = kubenode.Start(runCtx, cfg, c.emu, kubenode.Options{Log: log.WithName("booter")})
	if err != nil {
		return fail(err)
	}
	c.token = filepath.Join(env.Dir, TokenFile)
	if err := WriteToken(c.token, c.emu.AdminToken()); err != nil {
		return fail(err)
	}
	c.env = filepath.Join(env.Dir, EnvFile)
	if err := WriteEnv(c.env, c.Values(env.ClusterName)); err != nil {
		_ = os.Remove(c.token)
		return fail(err)
	}
	c.cancel, c.log = cancel, logFile
	if env.Progress != nil {
		fmt.Fprintf(env.Progress, "aws emulator listening on %s (region %s, %d zones, time scale %g); clients: set -a; . %s\n",
			c.emu.Endpoint(), c.emu.Options().Region, c.emu.Options().Zones, c.TimeScale, c.env)
	}
	return nil
}

// Values are the variables of EnvFile for this emulator.
func (c *Component) Values(cluster string) map[string]string {
	o := c.emu.Options()
	return map[string]string{
		VarEndpoint: c.emu.Endpoint(), VarRegion: o.Region, VarDefaultRegion: o.Region,
		VarAccessKeyID: "dummy", VarSecretAccessKey: "dummy",
		VarClusterName: cluster, VarInterruptionQueue: cluster,
	}
}

// Emulator is the running emulator (nil before Start).
func (c *Component) Emulator() *awsemu.Emulator { return c.emu }

// Stop implements stack.Component.
func (c *Component) Stop(ctx context.Context) error {
	if c.env != "" {
		_ = os.Remove(c.env)
	}
	if c.token != "" {
		_ = os.Remove(c.token)
	}
	c.booter.Close()
	err := c.emu.Close()
	c.cancel()
	c.log.Close()
	return err
}

func caPEM(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the control plane's CA: %w", err)
		}
		return b, nil
	}
	return nil, nil
}

// WriteEnv writes KEY=VALUE lines (sorted; values need no quoting) that
// `set -a; . FILE` exports and ReadEnv reads back.
func WriteEnv(path string, vals map[string]string) error {
	var b strings.Builder
	b.WriteString("# Written by `dovetail local up`: where the local AWS emulator listens.\n# Use with: set -a; . " + path + "; set +a\n")
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, vals[k])
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ErrNoEmulator is returned by ReadEnv when the directory has no running
// stack with an emulator.
var ErrNoEmulator = errors.New("no local AWS emulator is running there (start one with `dovetail local up`)")

// ReadEnv reads the variables of DIR/aws.env. Errors name the file and line.
func ReadEnv(dir string) (map[string]string, error) {
	path := filepath.Join(dir, EnvFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoEmulator)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseEnv(path, f)
}

func parseEnv(path string, r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s:%d: %q is not KEY=VALUE", path, n, line)
		}
		out[k] = strings.Trim(v, `"'`)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if out[VarEndpoint] == "" {
		return nil, fmt.Errorf("%s: no %s", path, VarEndpoint)
	}
	return out, nil
}

// WriteToken writes the admin token to path with mode 0600 (through a
// temporary file created 0600, so it is never readable by others).
func WriteToken(path, token string) error {
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadToken reads DIR/aws-admin-token. It refuses a file that others can
// read or write (the token lets anyone inject faults and kill instances),
// naming the file and its mode.
func ReadToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: no admin token (`dovetail local up` writes it; a stack started by an older dovetail must be restarted): %w", path, ErrNoEmulator)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %04o lets other users read the admin token; it must be 0600 (chmod 600 %s)", path, m, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty admin token", path)
	}
	return tok, nil
}

// Admin returns an admin client for the emulator of the stack in dir, with
// the endpoint of DIR/aws.env and the token of DIR/aws-admin-token.
func Admin(dir string) (*awsemu.AdminClient, error) {
	env, err := ReadEnv(dir)
	if err != nil {
		return nil, err
	}
	tok, err := ReadToken(dir)
	if err != nil {
		return nil, err
	}
	return &awsemu.AdminClient{Endpoint: env[VarEndpoint], Token: tok}, nil
}
