package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// ProviderName is what Name returns.
const ProviderName = "aws"

// DefaultMaxInstanceTypes is the most instance types one launch offers EC2
// (the cheapest ones that fit).
const DefaultMaxInstanceTypes = cloudprovider.DefaultMaxLaunchTypes

// Options configure a Provider.
type Options struct {
	// ClusterName is required.
	ClusterName string
	// ClusterEndpoint (https URL), ClusterCA (base64 PEM), ServiceCIDR and
	// KubernetesVersion (major.minor) describe the cluster to nodes; those
	// left empty are read with one eks:DescribeCluster call in New.
	ClusterEndpoint, ClusterCA, ServiceCIDR, KubernetesVersion string
	// Reader reads EC2NodeClasses (its scheme must know awsv1).
	Reader client.Reader
	// APIReader reads the kube-system/kube-dns Service (the cluster DNS
	// address for nodes whose class does not set kubelet.clusterDNS)
	// without a cache, so no cluster-wide Service informer is started
	// (default Reader).
	APIReader client.Reader
	// Clock is the time source (default the real clock).
	Clock clock.Clock
	// Log receives provider logs. Credentials never reach it.
	Log logr.Logger
	// Retry configures the SDK retryer (sdk.DefaultRetry when zero).
	Retry sdk.RetryOptions
	// PriceRefresh and TypeRefresh: see package instancetype.
	PriceRefresh, TypeRefresh time.Duration
	// BatchIdle and BatchMax: see package instance.
	BatchIdle, BatchMax time.Duration
	// VMMemoryOverheadPercent (default 0.075) and ReservedENIs feed the
	// allocatable model.
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	// MaxInstanceTypes per launch (default DefaultMaxInstanceTypes).
	MaxInstanceTypes int
	// Recorder, when set, receives the provider's events on NodeClaims
	// (a launch narrowed since the plan) and EC2NodeClasses.
	Recorder events.EventRecorder
	// UnavailableTTL is how long an insufficient-capacity answer keeps an
	// offering out (default 3 minutes).
	UnavailableTTL time.Duration
	// IsolatedVPC: call no AWS service without a VPC endpoint, which here
	// is the Pricing API; on-demand prices come from the built-in table.
	IsolatedVPC bool
	// NoReservedCapacity turns the ReservedCapacity gate off: instance
	// types get no reserved offerings, so nothing launches into the
	// capacity reservations node classes select (their status still
	// lists them).
	NoReservedCapacity bool
	// RebootForRepair (the peer's AWS feature gate): the repair policies
	// of reboot-clearable GPU faults reboot the instance rather than
	// replace it (package repair).
	RebootForRepair bool
	// DisableDryRun (the peer's DISABLE_DRY_RUN) skips the DryRun launch
	// calls that validate each EC2NodeClass (nodeclass.Resolver).
	DisableDryRun bool
}

// Provider is the AWS implementation of cloudprovider.CloudProvider.
type Provider struct {
	o   Options
	dns dnsCache
	// spotLive is 1 while spot prices are live, 0 while they are not;
	// spotFailures counts loads without live spot prices.
	spotLive     prometheus.GaugeFunc
	spotFailures prometheus.Counter
	region       string
	clients      *sdk.Clients
	types        *instancetype.Provider
	templates    *launchtemplate.Provider
	instances    *instance.Provider
	resolver     *nodeclass.Resolver
	launches     *launches
	subnets      *subnets
	reservations *reservationCounts
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New builds a Provider from an aws.Config (region and credentials
// resolved by the caller). Background batchers stop when ctx ends.
func New(ctx context.Context, cfg sdkaws.Config, o Options) (*Provider, error) {
	if o.ClusterName == "" {
		return nil, errors.New("aws provider: options: ClusterName is required")
	}
	if cfg.Region == "" {
		return nil, errors.New("aws provider: the AWS config has no region")
	}
	if o.Reader == nil {
		return nil, errors.New("aws provider: options: Reader is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.APIReader == nil {
		o.APIReader = o.Reader
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.MaxInstanceTypes <= 0 {
		o.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	clients := sdk.NewClients(cfg, o.Retry)
	p := &Provider{o: o, region: cfg.Region, clients: clients, launches: &launches{started: o.Clock.Now()}, subnets: newSubnets(),
		reservations: &reservationCounts{avail: map[string]int{}, fetched: map[string]time.Time{}}}
	p.spotFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "dovetail", Subsystem: "cloudprovider", Name: "spot_price_failures_total",
		Help: "Price loads in which live spot prices (DescribeSpotPriceHistory) could not be had.",
	})
	if err := p.discoverCluster(ctx); err != nil {
		return nil, err
	}
	pricingClient := clients.Pricing
	if o.IsolatedVPC {
		pricingClient = nil
	}
	p.types = instancetype.New(instancetype.Options{
		EC2: clients.EC2, Pricing: pricingClient, Region: cfg.Region, Clock: o.Clock,
		Unavailable:  unavailable.New(o.Clock, o.UnavailableTTL),
		PriceRefresh: o.PriceRefresh, TypeRefresh: o.TypeRefresh,
		VMMemoryOverheadPercent: o.VMMemoryOverheadPercent, ReservedENIs: o.ReservedENIs,
		Log: o.Log.WithName("instancetype"), SpotPriceFailures: p.spotFailures,
	})
	p.spotLive = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "dovetail", Subsystem: "cloudprovider", Name: "spot_prices_live",
		Help: "1 while spot offerings are priced from live spot prices, 0 while they are priced from stale or built-in prices (see the EC2NodeClass condition SpotPricesReady).",
	}, func() float64 {
		if st := p.types.SpotPriceStatus(); st.Known && !st.Live {
			return 0
		}
		return 1
	})
	p.templates = launchtemplate.NewProvider(clients.EC2, o.ClusterName)
	p.instances = instance.New(ctx, instance.Options{EC2: clients.EC2, BatchIdle: o.BatchIdle, BatchMax: o.BatchMax, Clock: o.Clock})
	p.resolver = &nodeclass.Resolver{
		EC2: clients.EC2, SSM: clients.SSM, IAM: clients.IAM, ClusterName: o.ClusterName, Region: cfg.Region,
		KubernetesVersion: p.o.KubernetesVersion, Clock: o.Clock,
		DisableDryRun:  o.DisableDryRun,
		Recorder:       o.Recorder,
		ObserveSubnets: p.subnets.observe,
		SpotPrices: func() (string, bool) {
			st := p.types.SpotPriceStatus()
			return st.Fallback(), st.Known
		},
	}
	return p, nil
}

// dnsCache remembers the cluster DNS address for dnsRefresh.
type dnsCache struct {
	mu   sync.Mutex
	ip   string
	at   time.Time
	seen bool
}

// dnsRefresh is how long a looked-up cluster DNS address (or its absence)
// is reused.
const dnsRefresh = 5 * time.Minute

// clusterDNS is the ClusterIP of the kube-system/kube-dns Service, "" when
// there is none (or it cannot be read: the image's bootstrap then derives
// the address itself).
func (p *Provider) clusterDNS(ctx context.Context) string {
	now := p.o.Clock.Now()
	p.dns.mu.Lock()
	defer p.dns.mu.Unlock()
	if p.dns.seen && now.Sub(p.dns.at) < dnsRefresh {
		return p.dns.ip
	}
	svc := &corev1.Service{}
	ip := ""
	if err := p.o.APIReader.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "kube-dns"}, svc); err != nil {
		p.o.Log.V(1).Info("no cluster DNS address from kube-system/kube-dns; nodes derive it", "error", err.Error())
	} else if c := svc.Spec.ClusterIP; c != "" && c != corev1.ClusterIPNone {
		ip = c
	}
	p.dns.ip, p.dns.at, p.dns.seen = ip, now, true
	return ip
}

// Collectors are the provider's own metrics, for the operator to register:
// dovetail_cloudprovider_spot_prices_live and
// dovetail_cloudprovider_spot_price_failures_total.
func (p *Provider) Collectors() []prometheus.Collector {
	return []prometheus.Collector{p.spotLive, p.spotFailures}
}

func (p *Provider) discoverCluster(ctx context.Context) error {
	o := &p.o
	if o.ClusterEndpoint != "" && o.ClusterCA != "" && o.ServiceCIDR != "" && o.KubernetesVersion != "" {
		return nil
	}
	out, err := p.clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: sdkaws.String(o.ClusterName)})
	if err != nil {
		return fmt.Errorf("aws provider: discovering cluster %s (set the endpoint, CA, service CIDR and version to skip): %w", o.ClusterName, err)
	}
	c := out.Cluster
	if o.ClusterEndpoint == "" {
		o.ClusterEndpoint = sdkaws.ToString(c.Endpoint)
	}
	if o.ClusterCA == "" && c.CertificateAuthority != nil {
		o.ClusterCA = sdkaws.ToString(c.CertificateAuthority.Data)
	}
	if o.ServiceCIDR == "" && c.KubernetesNetworkConfig != nil {
		o.ServiceCIDR = sdkaws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = sdkaws.ToString(c.Version)
	}
	if o.ClusterEndpoint == "" || o.KubernetesVersion == "" {
		return fmt.Errorf("aws provider: cluster %s: DescribeCluster gave no endpoint or version", o.ClusterName)
	}
	return nil
}

// Name returns "aws".
func (p *Provider) Name() string { return ProviderName }

// Resolver returns the EC2NodeClass resolver the node class controller
// calls to fill in status.
func (p *Provider) Resolver() *nodeclass.Resolver { return p.resolver }

// Clients returns the SDK clients (for the interruption queue and
// garbage collection).
func (p *Provider) Clients() *sdk.Clients { return p.clients }

// Unavailable returns the insufficient-capacity cache, which the
// interruption handler also marks on spot interruptions.
func (p *Provider) Unavailable() *unavailable.Cache { return p.types.Unavailable() }

// ClusterEndpoint, ClusterCA and KubernetesVersion are what nodes are told.
func (p *Provider) ClusterEndpoint() string   { return p.o.ClusterEndpoint }
func (p *Provider) KubernetesVersion() string { return p.o.KubernetesVersion }

// nodeClass reads the NodeClaim's or NodePool's EC2NodeClass; a class that
// is missing or not Ready is a *cloudprovider.NodeClassNotReadyError.
func (p *Provider) nodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil || ref.Name == "" {
		return nil, &cloudprovider.NodeClassNotReadyError{Err: errors.New("no nodeClassRef")}
	}
	if ref.Group != "" && ref.Group != awsv1.Group {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Err: fmt.Errorf("nodeClassRef group %q is not %s", ref.Group, awsv1.Group)}
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.o.Reader.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Err: err}
		}
		return nil, fmt.Errorf("reading EC2NodeClass %s: %w", ref.Name, err)
	}
	if !nc.IsTrue(awsv1.ConditionTypeReady) {
		msg := "condition Ready is not True"
		if c := nc.GetCondition(awsv1.ConditionTypeReady); c != nil && c.Message != "" {
			msg += ": " + c.Message
		}
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: ref.Name, Err: errors.New(msg)}
	}
	return nc, nil
}

// GetInstanceTypes lists what the NodePool's node class can launch.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	nc, err := p.nodeClass(ctx, nodePool.NodeClassRef())
	if err != nil {
		return nil, err
	}
	types, err := p.types.List(ctx, nc)
	if err != nil {
		return nil, err
	}
	return p.withReserved(ctx, nc, types), nil
}

// ProviderID formats the providerID of an instance.
func ProviderID(zone, instanceID string) string { return "aws:///" + zone + "/" + instanceID }

// ParseProviderID returns the instance id of a <provider>:///<zone>/<id>
// providerID. The provider part is not checked (the peer reads any, so a
// NodeClaim whose providerID names another provider is looked up by its
// instance id, found missing and garbage-collected like any other).
func ParseProviderID(providerID string) (string, error) {
	provider, rest, ok := strings.Cut(providerID, ":///")
	bad := func() error {
		// %q escapes control characters; Clip caps what a hostile status echoes.
		return fmt.Errorf("providerID %q is not <provider>:///<zone>/<instance-id>", termtext.Clip(providerID, 128))
	}
	if !ok || provider == "" || strings.Contains(provider, "/") {
		return "", bad()
	}
	zone, id, ok := strings.Cut(rest, "/")
	if !ok || zone == "" || !strings.HasPrefix(id, "i-") || len(id) == len("i-") || !instanceIDChars(id[2:]) {
		return "", bad()
	}
	return id, nil
}

// instanceIDChars reports whether s is only ASCII letters and digits, as
// the part of an EC2 instance id after "i-" is ("..", "/", escapes are not).
func instanceIDChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func decodeCA(ca string) string {
	if _, err := base64.StdEncoding.DecodeString(ca); err == nil {
		return ca
	}
	return base64.StdEncoding.EncodeToString([]byte(ca))
}
