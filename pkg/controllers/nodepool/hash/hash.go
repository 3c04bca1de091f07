package hash

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Version is the version of the hashing scheme, written to
// karpenter.sh/nodepool-hash-version.
const Version = "v1"

// canonical is what is hashed; its JSON encoding is stable (encoding/json
// sorts map keys).
type canonical struct {
	Labels                 map[string]string          `json:"labels,omitempty"`
	Annotations            map[string]string          `json:"annotations,omitempty"`
	Taints                 []corev1.Taint             `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint             `json:"startupTaints,omitempty"`
	NodeClassRef           *karpv1.NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfterSeconds     *int64                     `json:"expireAfter,omitempty"`
	ExpireNever            bool                       `json:"expireNever,omitempty"`
	TerminationGracePeriod *int64                     `json:"terminationGracePeriod,omitempty"`
}

// Hash returns the template hash of the NodePool (see the package doc).
func Hash(np *karpv1.NodePool) string {
	t := np.Spec.Template
	c := canonical{
		Labels:        t.Labels,
		Annotations:   t.Annotations,
		Taints:        sortedTaints(t.Spec.Taints),
		StartupTaints: sortedTaints(t.Spec.StartupTaints),
		NodeClassRef:  t.Spec.NodeClassRef,
	}
	if d, ok := t.Spec.ExpireAfter.Duration(); ok {
		s := int64(d.Seconds())
		c.ExpireAfterSeconds = &s
	}
	c.ExpireNever = t.Spec.ExpireAfter.IsNever()
	if t.Spec.TerminationGracePeriod != nil {
		s := int64(t.Spec.TerminationGracePeriod.Seconds())
		c.TerminationGracePeriod = &s
	}
	b, err := json.Marshal(c)
	if err != nil {
		// Only maps of strings, taints and integers: cannot fail.
		panic("hash: encoding the canonical template: " + err.Error())
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}

func sortedTaints(ts []corev1.Taint) []corev1.Taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]corev1.Taint, len(ts))
	for i, t := range ts {
		out[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		if out[i].Effect != out[j].Effect {
			return out[i].Effect < out[j].Effect
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// Annotations returns the two annotations a NodePool (and a NodeClaim made
// from it now) should carry.
func Annotations(np *karpv1.NodePool) map[string]string {
	return map[string]string{
		karpv1.NodePoolHashAnnotationKey:        Hash(np),
		karpv1.NodePoolHashVersionAnnotationKey: Version,
	}
}
