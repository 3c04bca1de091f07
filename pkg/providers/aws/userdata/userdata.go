package userdata

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// Input is everything the user data of one node depends on.
type Input struct {
	// Family is the AMI family: awsv1.AMIFamilyAL2023, AMIFamilyBottlerocket,
	// AMIFamilyAL2 or AMIFamilyCustom.
	Family string
	// ClusterName, ClusterEndpoint (https URL) and ClusterCA (the cluster's
	// PEM certificate authority, base64-encoded as EKS returns it) tell the
	// node which API server to join.
	ClusterName     string
	ClusterEndpoint string
	ClusterCA       string
	// ServiceCIDR is the cluster's service IPv4 CIDR (AL2023 needs it to
	// derive the cluster DNS address).
	ServiceCIDR string
	// ClusterDNS is the cluster DNS address (the kube-system/kube-dns
	// Service's ClusterIP) the kubelet gets when Kubelet.ClusterDNS is
	// empty; "" leaves it to the image's bootstrap.
	ClusterDNS string
	// Labels are the node labels to register with. Keys the kubelet may not
	// set on itself are dropped (see KubeletMaySet).
	Labels map[string]string
	// Taints are the taints to register with (the NodeClaim's taints, its
	// startup taints and karpenter.sh/unregistered:NoExecute).
	Taints []corev1.Taint
	// Kubelet is the EC2NodeClass's spec.kubelet (may be nil).
	Kubelet *awsv1.KubeletConfiguration
	// UserData is the EC2NodeClass's spec.userData (may be nil).
	UserData *string
	// InstanceStorePolicy is the class's spec.instanceStorePolicy; "RAID0"
	// makes AL2023 nodes stripe their local NVMe disks for ephemeral
	// storage (nodeadm's localStorage strategy).
	InstanceStorePolicy string
}

// ErrInvalidUserData is wrapped by every *Error.
var ErrInvalidUserData = errors.New("invalid user data")

// Error reports user data that cannot be merged or parsed.
type Error struct {
	// Family is the AMI family the data was read as.
	Family string
	// Detail says what is wrong, and where.
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("spec.userData: invalid %s user data: %s", e.Family, e.Detail)
}

// Unwrap returns ErrInvalidUserData.
func (e *Error) Unwrap() error { return ErrInvalidUserData }

// FieldError returns the error as a field error at spec.userData.
func (e *Error) FieldError() *field.Error {
	return field.Invalid(field.NewPath("spec", "userData"), "(user data)", fmt.Sprintf("invalid %s user data: %s", e.Family, e.Detail))
}

func newError(family, format string, args ...any) *Error {
	return &Error{Family: family, Detail: fmt.Sprintf(format, args...)}
}

// Render returns the user data (plain text; EC2 wants it base64-encoded)
// for in.Family. Unknown families are an error.
func Render(in Input) (string, error) {
	if in.ClusterDNS != "" && (in.Kubelet == nil || len(in.Kubelet.ClusterDNS) == 0) {
		k := &awsv1.KubeletConfiguration{}
		if in.Kubelet != nil {
			k = in.Kubelet.DeepCopy()
		}
		k.ClusterDNS = []string{in.ClusterDNS}
		in.Kubelet = k
	}
	switch in.Family {
	case awsv1.AMIFamilyAL2023:
		return renderAL2023(in)
	case awsv1.AMIFamilyBottlerocket:
		return renderBottlerocket(in)
	case awsv1.AMIFamilyAL2:
		return renderAL2(in)
	case awsv1.AMIFamilyCustom:
		if in.UserData == nil {
			return "", nil
		}
		return *in.UserData, nil
	default:
		return "", fmt.Errorf("userdata: unsupported AMI family %q (supported: %s, %s, %s, %s)", in.Family,
			awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom)
	}
}

// kubeletSelfLabelKeys are the kubernetes.io-domain labels a kubelet may set
// on its own Node (the NodeRestriction admission rules).
var kubeletSelfLabelKeys = map[string]bool{
	corev1.LabelHostname:                true,
	corev1.LabelArchStable:              true,
	corev1.LabelOSStable:                true,
	corev1.LabelInstanceTypeStable:      true,
	corev1.LabelInstanceType:            true,
	corev1.LabelTopologyZone:            true,
	corev1.LabelTopologyRegion:          true,
	corev1.LabelFailureDomainBetaZone:   true,
	corev1.LabelFailureDomainBetaRegion: true,
	"beta.kubernetes.io/arch":           true,
	"beta.kubernetes.io/os":             true,
}

// KubeletMaySet reports whether a kubelet may put the label key on its own
// Node: any key outside the kubernetes.io and k8s.io domains, the
// kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes, and a few
// well-known keys (hostname, arch, os, instance type, zone, region).
func KubeletMaySet(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if prefix == "kubelet.kubernetes.io" || prefix == "node.kubernetes.io" || kubeletSelfLabelKeys[key] {
		return true
	}
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return false
		}
	}
	return true
}

// nodeLabels returns the labels the kubelet may register, sorted by key, as
// "k=v" strings.
func nodeLabels(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if KubeletMaySet(k) {
			out = append(out, k+"="+labels[k])
		}
	}
	return out
}

// sortedTaints returns the taints without duplicates (same key and effect:
// the first wins), sorted by key, effect and value.
func sortedTaints(ts []corev1.Taint) []corev1.Taint {
	seen := map[[2]string]bool{}
	out := make([]corev1.Taint, 0, len(ts))
	for _, t := range ts {
		k := [2]string{t.Key, string(t.Effect)}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		if a.Effect != b.Effect {
			return a.Effect < b.Effect
		}
		return a.Value < b.Value
	})
	return out
}

// taintFlag renders a taint as the kubelet's --register-with-taints wants
// it: key=value:Effect, or key:Effect without a value.
func taintFlag(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// parseTaintFlag is the inverse of taintFlag.
func parseTaintFlag(s string) (corev1.Taint, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", s)
	}
	kv, effect := s[:i], corev1.TaintEffect(s[i+1:])
	if err := validEffect(effect); err != nil {
		return corev1.Taint{}, fmt.Errorf("taint %q: %w", s, err)
	}
	k, v, _ := strings.Cut(kv, "=")
	if k == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has an empty key", s)
	}
	return corev1.Taint{Key: k, Value: v, Effect: effect}, nil
}

func validEffect(e corev1.TaintEffect) error {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("effect %q is not one of NoSchedule, PreferNoSchedule, NoExecute", e)
}

// sortedPairs renders a map as "k=v" joined by sep, keys sorted.
func sortedPairs(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, sep)
}

// boundary picks a MIME boundary that occurs in none of the parts, derived
// from their content so that rendering stays deterministic.
func boundary(parts []mimePart) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p.contentType))
		h.Write([]byte{0})
		h.Write([]byte(p.body))
		h.Write([]byte{0})
	}
	sum := h.Sum64()
	for i := 0; ; i++ {
		b := "//dovetail-" + strconv.FormatUint(sum, 36) + strconv.Itoa(i)
		clash := false
		for _, p := range parts {
			if strings.Contains(p.body, b) {
				clash = true
				break
			}
		}
		if !clash {
			return b
		}
	}
}

// durationString renders a metav1.Duration the way kubelet configuration
// files spell durations ("1m30s").
func durationString(d metav1.Duration) string { return d.Duration.String() }
