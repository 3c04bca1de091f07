package engine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Label keys the engine gives meaning to. The karpenter.sh keys are the
// Karpenter v1 ones.
const (
	labelZone         = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	labelRegion       = corev1.LabelTopologyRegion     // topology.kubernetes.io/region
	labelZoneID       = "topology.k8s.aws/zone-id"     // per offering
	labelCapacityType = "karpenter.sh/capacity-type"   // per offering
	labelNodePool     = "karpenter.sh/nodepool"        // per pool
	labelHostname     = corev1.LabelHostname           // per node
	labelInstanceType = corev1.LabelInstanceTypeStable // per type
	// The capacity reservation a reserved offering launches into, and its
	// type ("default", "capacity-block"): per offering, absent on spot and
	// on-demand ones. A pool's requirements on them filter its offerings;
	// otherwise they are pool labels like any other key.
	labelReservationID   = "karpenter.k8s.aws/capacity-reservation-id"
	labelReservationType = "karpenter.k8s.aws/capacity-reservation-type"
)

// offeringValuePasses reports whether an offering's value for a
// per-offering key ("" when the offering has none) passes r (nil: no
// requirement).
func offeringValuePasses(r *requirements.Requirement, v string) bool {
	if r == nil {
		return true
	}
	if v == "" {
		return r.AllowsAbsent()
	}
	return r.Has(v)
}

// keyKind classifies a label key by where a new node's value comes from.
type keyKind uint8

const (
	kindOther    keyKind = iota // pool template labels, pool requirements, or absent
	kindZone                    // the offering's zone
	kindZoneID                  // the offering's zone id
	kindCapacity                // the offering's capacity type
	kindHostname                // unique per node
	kindNodePool                // the pool's name
	kindRegion                  // Input.Region
)

func classifyKey(key string) keyKind {
	switch key {
	case labelZone:
		return kindZone
	case labelZoneID:
		return kindZoneID
	case labelCapacityType:
		return kindCapacity
	case labelHostname:
		return kindHostname
	case labelNodePool:
		return kindNodePool
	case labelRegion:
		return kindRegion
	}
	return kindOther
}

func ctIndex(ct string) int {
	switch ct {
	case cloudprovider.CapacityTypeOnDemand:
		return ctOnDemand
	case cloudprovider.CapacityTypeSpot:
		return ctSpot
	case cloudprovider.CapacityTypeReserved:
		return ctReserved
	}
	return -1
}

var ctNames = [nCT]string{cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeReserved}

// tolerates reports whether the tolerations tolerate every taint with an
// effect in blocking (NoSchedule, NoExecute). It returns the first taint not
// tolerated. Comparison operators (Lt, Gt) never match, as with the
// kube-scheduler's default feature gates.
func tolerates(tols []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !toleratesTaint(tols, t) {
			return *t, false
		}
	}
	return corev1.Taint{}, true
}

// toleratesPrefer reports whether every PreferNoSchedule taint is tolerated.
func toleratesPrefer(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !toleratesTaint(tols, t) {
			return false
		}
	}
	return true
}

func toleratesTaint(tols []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tols {
		tol := &tols[i]
		if tol.Effect != "" && tol.Effect != t.Effect {
			continue
		}
		if tol.Key != "" && tol.Key != t.Key {
			continue
		}
		switch tol.Operator {
		case "", corev1.TolerationOpEqual:
			if tol.Value == t.Value {
				return true
			}
		case corev1.TolerationOpExists:
			return true
		}
	}
	return false
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// podTerms returns the OR of node selector terms a pod's placement must
// satisfy: spec.nodeSelector AND one of the required node affinity terms.
// A pod with neither gets one empty term (anything matches).
func podTerms(pod *corev1.Pod) ([]requirements.Requirements, error) {
	base := requirements.FromNodeSelector(pod.Spec.NodeSelector)
	var terms []corev1.NodeSelectorTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			return nil, &termError{path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", err: errNoTerms}
		}
	}
	if len(terms) == 0 {
		return []requirements.Requirements{base}, nil
	}
	out := make([]requirements.Requirements, 0, len(terms))
	for i, t := range terms {
		rs, err := requirements.FromNodeSelectorTerm(t)
		if err != nil {
			return nil, &termError{path: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[" + itoa(i) + "]", err: err}
		}
		out = append(out, base.Intersection(rs))
	}
	return out, nil
}

type termError struct {
	path string
	err  error
}

func (e *termError) Error() string { return e.path + ": " + e.err.Error() }
func (e *termError) Unwrap() error { return e.err }

type constError string

func (e constError) Error() string { return string(e) }

const errNoTerms = constError("must have at least one term")

func itoa(i int) string {
	if i >= 0 && i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

// describeReq renders a requirement for a message ("zone In [a b]").
func describeReq(r *requirements.Requirement) string {
	if r == nil {
		return "(none)"
	}
	return r.String()
}

func joinQuoted(vs []string) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('"')
		b.WriteString(v)
		b.WriteByte('"')
	}
	return b.String()
}
