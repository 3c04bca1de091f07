package simulate

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

// pdbValue is a minAvailable or maxUnavailable value: a count, or a
// percentage (pct true, n in 0..100).
type pdbValue struct {
	n   int
	pct bool
}

// pdbPercent parses an IntOrString as the API server accepts it for a
// PodDisruptionBudget: a non-negative integer, or "N%" with N from 0 to 100.
func pdbPercent(v intstr.IntOrString) (pdbValue, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return pdbValue{}, errors.New("must not be negative")
		}
		return pdbValue{n: int(v.IntVal)}, nil
	}
	s, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return pdbValue{}, errors.New("must be an integer or a percentage (\"50%\")")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 100 {
		return pdbValue{}, errors.New("must be a percentage from 0% to 100%")
	}
	return pdbValue{n: n, pct: true}, nil
}

// scaled is v of total: a count as it is, a percentage of total rounded up
// (as the disruption controller rounds both minAvailable and
// maxUnavailable).
func (v pdbValue) scaled(total int) int {
	if !v.pct {
		return v.n
	}
	return int(math.Ceil(float64(v.n) * float64(total) / 100))
}

// PDBAllowance is how many pods a PodDisruptionBudget allows evicting now,
// computed as the disruption controller would from the pods it covers
// (pods of its namespace that its selector matches, bound to a node and
// not finished), all counted healthy: with minAvailable, healthy minus
// minAvailable; with maxUnavailable, healthy minus (covered minus
// maxUnavailable); percentages of the covered pods round up; with neither,
// every covered pod. Never negative. A nil selector covers no pod, an
// empty one every pod of the namespace (policy/v1). The PDB must be valid
// (Manifests.Read checks it); an invalid value allows 0.
func PDBAllowance(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) int32 {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return 0
	}
	covered := 0
	for _, p := range pods {
		if p.Namespace != pdb.Namespace || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			covered++
		}
	}
	healthy, desired := covered, 0
	switch {
	case pdb.Spec.MinAvailable != nil:
		v, err := pdbPercent(*pdb.Spec.MinAvailable)
		if err != nil {
			return 0
		}
		desired = v.scaled(covered)
	case pdb.Spec.MaxUnavailable != nil:
		v, err := pdbPercent(*pdb.Spec.MaxUnavailable)
		if err != nil {
			return 0
		}
		desired = max(covered-v.scaled(covered), 0)
	}
	return int32(max(healthy-desired, 0))
}

// PDBs converts the input's PodDisruptionBudgets for the planner: the
// allowance is status.disruptionsAllowed when the document states it, else
// PDBAllowance over pods. Sorted by namespace and name.
func (m *Manifests) PDBs(pods []*corev1.Pod) []disruption.PDB {
	out := make([]disruption.PDB, 0, len(m.PodDisruptionBudgets))
	for _, pdb := range m.PodDisruptionBudgets {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue // refused by Read
		}
		allowed := pdb.Status.DisruptionsAllowed
		if !m.pdbAllowed[ObjectKey{Kind: "PodDisruptionBudget", Namespace: pdb.Namespace, Name: pdb.Name}] {
			allowed = PDBAllowance(pdb, pods)
		}
		out = append(out, disruption.PDB{Namespace: pdb.Namespace, Name: pdb.Name, Selector: sel, DisruptionsAllowed: allowed})
	}
	slices.SortFunc(out, func(a, b disruption.PDB) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
