package operator

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// PeerSettings are the peer's v1.15 settings (the environment its Helm
// chart renders) beyond the ones Options has always had. Each is accepted
// at the peer's default; a value dovetail does not implement is refused by
// Validate, naming the setting and saying why, so none is silently
// ignored. docs/controller.md lists what each one does here.
type PeerSettings struct {
	// AWSFeatureGates (awsFeatureGates): the peer's AWS gates (AWSGates).
	AWSFeatureGates FeatureGates
	// PreferencePolicy (preferencePolicy): Respect only.
	PreferencePolicy string
	// MinValuesPolicy (minValuesPolicy): Strict only.
	MinValuesPolicy string
	// ClusterCABundle (clusterCABundle): base64 PEM of the API server's CA
	// for new nodes; empty means read with eks:DescribeCluster.
	ClusterCABundle string
	// IsolatedVPC (isolatedVPC): AWS services without a VPC endpoint are
	// not called; for dovetail that is the Pricing API, so on-demand prices
	// come from the built-in table.
	IsolatedVPC bool
	// EKSControlPlane (eksControlPlane): where the Kubernetes version
	// nodes are told comes from: the API server when false (the peer's
	// default), eks:DescribeCluster when true. The endpoint, CA and service
	// CIDR not given are read with eks:DescribeCluster either way.
	EKSControlPlane bool
	// VMMemoryOverheadPercent (vmMemoryOverheadPercent): the fraction of
	// memory lost to virtualisation, in (0, 1).
	VMMemoryOverheadPercent float64
	// ReservedENIs (reservedENIs): ENIs kept from the VPC CNI's pod count.
	ReservedENIs int
	// EnableZonalShift (enableZonalShift): true is refused.
	EnableZonalShift bool
	// IgnoreDRARequests (ignoreDRARequests): dovetail does not size nodes
	// for DRA claims; false is refused.
	IgnoreDRARequests bool
	// LegacyNodeRepair (legacyNodeRepair): true is refused.
	LegacyNodeRepair bool
	// DisableClusterStateObservability: true is refused.
	DisableClusterStateObservability bool
	// DisableDryRun (disableDryRun): true skips the DryRun CreateLaunchTemplate,
	// CreateFleet and RunInstances calls that validate each EC2NodeClass
	// (ValidationSucceeded; aws.Options.DisableDryRun).
	DisableDryRun bool
	// AMIRefreshInterval, SubnetRefreshInterval and
	// SecurityGroupRefreshInterval: each at least a minute. dovetail
	// resolves a class's AMIs, subnets and security groups together, at
	// the shortest of the three (NodeClassRefreshInterval).
	AMIRefreshInterval, SubnetRefreshInterval, SecurityGroupRefreshInterval time.Duration
	// KubernetesMinVersion (kubernetesMinVersion): the controller refuses
	// to start against an older API server.
	KubernetesMinVersion string
	// KarpenterService (karpenterService) names the Service in front of
	// the controller; the peer uses it for its webhooks, which dovetail
	// does not have. Checked to be a Service name.
	KarpenterService string
	// LogOutputPaths (logOutputPaths): where logs go, stdout and/or
	// stderr (empty: stderr).
	LogOutputPaths []string
	// LogErrorOutputPaths (logErrorOutputPaths): stderr only.
	LogErrorOutputPaths []string
	// CPURequests (cpuRequests): the container's CPU request in
	// millicores (the downward API). As the peer's, it scales how many
	// NodeClaims the lifecycle controller reconciles at once
	// (lifecycle.ScaledWorkers: 100 at one core, 5000 at 60).
	CPURequests int64
	// MemoryLimit (memoryLimit): the container's memory limit in bytes
	// (the downward API); when positive and GOMEMLIMIT is unset, Go's soft
	// memory limit is set to 90% of it.
	MemoryLimit int64
	// SchedulerConfig (schedulerConfig): the peer's SCHEDULER_CONFIG, a
	// YAML or JSON document {podTopologySpread: {defaultConstraints: [...]}}
	// mirroring the cluster's kube-scheduler (package spreaddefaults).
	// Empty: none. Provisioning and disruption give the default
	// constraints to every pod without its own (SpreadDefaults).
	SchedulerConfig string
}

// SpreadDefaults are the default topology spread constraints of
// SchedulerConfig (nil when it is empty or invalid: Validate reports it).
func (p PeerSettings) SpreadDefaults() []corev1.TopologySpreadConstraint {
	c, err := spreaddefaults.Parse([]byte(p.SchedulerConfig))
	if err != nil {
		return nil
	}
	return c.Constraints()
}

// Peer defaults, as the peer's v1.15 chart and binary have them.
const (
	DefaultPreferencePolicy        = "Respect"
	DefaultMinValuesPolicy         = "Strict"
	DefaultVMMemoryOverheadPercent = 0.075
	DefaultNodeClassRefresh        = time.Minute
	DefaultKubernetesMinVersion    = "1.19.0-0"
)

// DefaultPeerSettings returns the peer's defaults.
func DefaultPeerSettings() PeerSettings {
	return PeerSettings{
		AWSFeatureGates:         DefaultAWSFeatureGates(),
		PreferencePolicy:        DefaultPreferencePolicy,
		MinValuesPolicy:         DefaultMinValuesPolicy,
		VMMemoryOverheadPercent: DefaultVMMemoryOverheadPercent,
		IgnoreDRARequests:       true,
		AMIRefreshInterval:      DefaultNodeClassRefresh, SubnetRefreshInterval: DefaultNodeClassRefresh,
		SecurityGroupRefreshInterval: DefaultNodeClassRefresh,
		KubernetesMinVersion:         DefaultKubernetesMinVersion,
	}
}

// AWSGates are the peer's AWS feature gates (AWS_FEATURE_GATES), all off by
// default. Only RebootForRepair is implemented: true is refused for the
// others.
var AWSGates = map[string]Gate{
	"NodeClassCEL": {RefuseOn: true,
		On:  "not implemented: dovetail's EC2NodeClass CRD has no optional CEL validation to switch on",
		Off: "EC2NodeClasses are validated by the CRD schema and the controller"},
	"DRANVIDIAGPU": {RefuseOn: true,
		On:  "not implemented: dovetail does not size nodes for gpu.nvidia.com DRA claims",
		Off: "DRA claims are not counted when sizing nodes"},
	"DRAEFA": {RefuseOn: true,
		On:  "not implemented: dovetail does not size nodes for dra.net (EFA) DRA claims",
		Off: "DRA claims are not counted when sizing nodes"},
	RebootForRepairGate: {
		On:  "node repair reboots an instance in place (ec2:RebootInstances, at most twice, keeping its pods) for a GPU fault a reboot may clear, and replaces it if the fault persists; needs NodeRepair",
		Off: "node repair replaces unhealthy nodes, it never reboots them"},
}

// RebootForRepairGate names the peer's AWS gate that reboots
// reboot-clearable faults in place (aws.Options.RebootForRepair).
const RebootForRepairGate = "RebootForRepair"

// DefaultAWSFeatureGates returns the AWS gates' defaults.
func DefaultAWSFeatureGates() FeatureGates {
	out := FeatureGates{}
	for k, g := range AWSGates {
		out[k] = g.Default
	}
	return out
}

// ParseAWSFeatureGates parses AWS_FEATURE_GATES as ParseFeatureGates does
// FEATURE_GATES.
func ParseAWSFeatureGates(s string) (FeatureGates, error) { return parseGates(AWSGates, s) }

// NodeClassRefreshInterval is how often the EC2NodeClass status controller
// re-resolves a class: the shortest of the three refresh intervals.
func (p PeerSettings) NodeClassRefreshInterval() time.Duration {
	return min(p.AMIRefreshInterval, p.SubnetRefreshInterval, p.SecurityGroupRefreshInterval)
}

// SoftMemoryLimit is the Go soft memory limit MemoryLimit asks for (90% of
// it), or 0 for none.
func (p PeerSettings) SoftMemoryLimit() int64 {
	if p.MemoryLimit <= 0 {
		return 0
	}
	return int64(float64(p.MemoryLimit) * 0.9)
}

func (p PeerSettings) validate() field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateGates("awsFeatureGates", AWSGates, p.AWSFeatureGates)...)
	only := func(name, got, want, why string) {
		if got != want {
			errs = append(errs, field.Invalid(field.NewPath(name), capEcho(got), fmt.Sprintf("only %s is supported: %s", want, why)))
		}
	}
	only("preferencePolicy", p.PreferencePolicy, DefaultPreferencePolicy,
		"dovetail always honours preferred affinities and ScheduleAnyway spreads (Ignore is not implemented)")
	only("minValuesPolicy", p.MinValuesPolicy, DefaultMinValuesPolicy,
		"a NodePool whose minValues cannot be met gets no node (BestEffort relaxing is not implemented)")
	refuse := func(name string, bad bool, value any, why string) {
		if bad {
			errs = append(errs, field.Invalid(field.NewPath(name), value, why))
		}
	}
	refuse("enableZonalShift", p.EnableZonalShift, true, "not implemented: dovetail does not read ARC zonal shifts; leave it false")
	refuse("ignoreDRARequests", !p.IgnoreDRARequests, false, "not implemented: dovetail does not size nodes for DRA claims, so it ignores them; leave it true")
	refuse("legacyNodeRepair", p.LegacyNodeRepair, true, "not implemented: dovetail has no legacy (forceful, unbudgeted) node repair; node repair is the NodeRepair feature gate; leave it false")
	refuse("disableClusterStateObservability", p.DisableClusterStateObservability, true,
		"not implemented: dovetail's cluster state metrics and events cannot be turned off; leave it false")
	if p.ClusterCABundle != "" {
		if err := checkCABundle(p.ClusterCABundle); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("clusterCABundle"), capEcho(p.ClusterCABundle), err.Error()))
		}
	}
	if v := p.VMMemoryOverheadPercent; !(v > 0 && v < 1) || math.IsNaN(v) {
		errs = append(errs, field.Invalid(field.NewPath("vmMemoryOverheadPercent"), v,
			"must be above 0 and below 1 (0.075 is 7.5%; dovetail's allocatable model has no zero overhead)"))
	}
	if p.ReservedENIs < 0 {
		errs = append(errs, field.Invalid(field.NewPath("reservedENIs"), p.ReservedENIs, "must not be negative"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"amiRefreshInterval", p.AMIRefreshInterval}, {"subnetRefreshInterval", p.SubnetRefreshInterval}, {"securityGroupRefreshInterval", p.SecurityGroupRefreshInterval}} {
		if d.v < time.Minute {
			errs = append(errs, field.Invalid(field.NewPath(d.name), d.v.String(), "must be at least 1m"))
		}
	}
	if _, err := utilversion.ParseGeneric(p.KubernetesMinVersion); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("kubernetesMinVersion"), capEcho(p.KubernetesMinVersion), "must be a version such as 1.19.0-0"))
	}
	if p.KarpenterService != "" {
		if msgs := validation.IsDNS1035Label(p.KarpenterService); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("karpenterService"), capEcho(p.KarpenterService), "must be a Service name: "+msgs[0]))
		}
	}
	for _, out := range p.LogOutputPaths {
		if out != "stdout" && out != "stderr" {
			errs = append(errs, field.NotSupported(field.NewPath("logOutputPaths"), capEcho(out), []string{"stdout", "stderr"}))
		}
	}
	for _, out := range p.LogErrorOutputPaths {
		if out != "stderr" {
			errs = append(errs, field.NotSupported(field.NewPath("logErrorOutputPaths"), capEcho(out), []string{"stderr"}))
		}
	}
	if dup := duplicated(p.LogOutputPaths); dup != "" {
		errs = append(errs, field.Duplicate(field.NewPath("logOutputPaths"), dup))
	}
	if p.SchedulerConfig != "" {
		if _, err := spreaddefaults.Parse([]byte(p.SchedulerConfig)); err != nil {
			// One error per problem, each naming its path in the document.
			var agg utilerrors.Aggregate
			if errors.As(err, &agg) {
				for _, e := range agg.Errors() {
					errs = append(errs, field.Invalid(field.NewPath("schedulerConfig"), field.OmitValueType{}, e.Error()))
				}
			} else {
				errs = append(errs, field.Invalid(field.NewPath("schedulerConfig"), field.OmitValueType{}, err.Error()))
			}
		}
	}
	refuse("cpuRequests", p.CPURequests < 0, p.CPURequests, "must not be negative (millicores)")
	refuse("memoryLimit", p.MemoryLimit < 0, p.MemoryLimit, "must not be negative (bytes)")
	return errs
}

func duplicated(list []string) string {
	s := slices.Clone(list)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return s[i]
		}
	}
	return ""
}

// checkCABundle accepts base64 of one or more PEM certificates, as the
// peer's CLUSTER_CA_BUNDLE and EKS's certificateAuthority.data are.
func checkCABundle(s string) error {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("must be base64-encoded PEM certificates: %v", err)
	}
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %v", n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("decodes to no PEM certificate")
	}
	return nil
}
