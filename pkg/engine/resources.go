package engine

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nres is the number of resource dimensions a solve tracks: cpu, memory,
// pods, ephemeral-storage and up to four extended resources that pods ask
// for (nvidia.com/gpu, hugepages-2Mi, ...).
const nres = 8

// Fixed resource dimensions.
const (
	rCPU  = iota // millicores
	rMem         // bytes
	rPods        // pod slots
	rEph         // bytes
	rExt         // first extended resource
)

// rvec is an amount of every tracked resource. cpu is in millicores, every
// other resource in its base unit, rounded up.
type rvec [nres]int64

// MaxQuantity is the largest amount of one resource the engine represents
// (in its unit: millicores for cpu, the base unit otherwise): 2^50, a
// million times the largest instance type (2^50 millicores are a trillion
// cores; 2^50 bytes are 1 PiB). A larger quantity, on a pod or anywhere
// else, counts as MaxQuantity: a pod asking for that much fits no instance
// type and is left unschedulable as any too-large pod is. Sums saturate at
// MaxQuantity too, so that no arithmetic on amounts can overflow. Inputs
// that state capacities (catalog files, Nodes) should refuse values above
// it (QuantityInRange).
const MaxQuantity int64 = 1 << 50

var (
	maxMilliQuantity = resource.NewMilliQuantity(MaxQuantity, resource.DecimalSI)
	maxBaseQuantity  = resource.NewQuantity(MaxQuantity, resource.DecimalSI)
)

// QuantityInRange reports whether a quantity of the named resource is
// between -MaxQuantity and MaxQuantity in the engine's unit.
func QuantityInRange(name corev1.ResourceName, q resource.Quantity) bool {
	limit := maxBaseQuantity
	if name == corev1.ResourceCPU {
		limit = maxMilliQuantity
	}
	if q.Sign() < 0 {
		q = q.DeepCopy()
		q.Neg()
	}
	return q.Cmp(*limit) <= 0
}

// satAdd adds two amounts in [-MaxQuantity, MaxQuantity], saturating.
func satAdd(a, b int64) int64 {
	switch s := a + b; {
	case s > MaxQuantity:
		return MaxQuantity
	case s < -MaxQuantity:
		return -MaxQuantity
	default:
		return s
	}
}

func (a rvec) add(b rvec) rvec {
	for i := range a {
		a[i] = satAdd(a[i], b[i])
	}
	return a
}

func (a rvec) sub(b rvec) rvec {
	for i := range a {
		a[i] = satAdd(a[i], -b[i])
	}
	return a
}

// fits reports a <= b in every dimension.
func (a rvec) fits(b rvec) bool {
	return a[0] <= b[0] && a[1] <= b[1] && a[2] <= b[2] && a[3] <= b[3] &&
		a[4] <= b[4] && a[5] <= b[5] && a[6] <= b[6] && a[7] <= b[7]
}

// fitsSum reports a+b <= c in every dimension.
func fitsSum(a, b, c *rvec) bool {
	for i := range nres {
		if a[i]+b[i] > c[i] {
			return false
		}
	}
	return true
}

func (a rvec) max(b rvec) rvec {
	for i := range a {
		if b[i] > a[i] {
			a[i] = b[i]
		}
	}
	return a
}

func (a rvec) isZero() bool { return a == rvec{} }

// resTable maps resource names to dimensions for one solve.
type resTable struct {
	names [nres]corev1.ResourceName
	n     int
	ext   map[corev1.ResourceName]int
}

func newResTable() *resTable {
	t := &resTable{ext: map[corev1.ResourceName]int{}}
	t.names[rCPU] = corev1.ResourceCPU
	t.names[rMem] = corev1.ResourceMemory
	t.names[rPods] = corev1.ResourcePods
	t.names[rEph] = corev1.ResourceEphemeralStorage
	t.n = rExt
	return t
}

// index returns the dimension of a resource, or -1 when it is not tracked.
func (t *resTable) index(name corev1.ResourceName) int {
	switch name {
	case corev1.ResourceCPU:
		return rCPU
	case corev1.ResourceMemory:
		return rMem
	case corev1.ResourcePods:
		return rPods
	case corev1.ResourceEphemeralStorage:
		return rEph
	}
	if i, ok := t.ext[name]; ok {
		return i
	}
	return -1
}

// track adds the extended resources in names, sorted, while room remains.
func (t *resTable) track(names []corev1.ResourceName) {
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		if t.index(n) >= 0 || t.n >= nres {
			continue
		}
		t.ext[n] = t.n
		t.names[t.n] = n
		t.n++
	}
}

// quantityValue converts a quantity of the named resource to the engine's
// unit: millicores for cpu, the base unit (rounded up) otherwise; clamped
// to [-MaxQuantity, MaxQuantity] (the conversion itself would overflow).
func quantityValue(name corev1.ResourceName, q *resource.Quantity) int64 {
	if !QuantityInRange(name, *q) {
		if q.Sign() < 0 {
			return -MaxQuantity
		}
		return MaxQuantity
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// vec converts a resource list, ignoring untracked resources.
func (t *resTable) vec(l corev1.ResourceList) rvec {
	var v rvec
	for name, q := range l {
		if i := t.index(name); i >= 0 {
			v[i] = satAdd(v[i], quantityValue(name, &q))
		}
	}
	return v
}

// list converts back to a resource list (zero dimensions left out, except
// cpu, memory and pods).
func (t *resTable) list(v rvec) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < t.n; i++ {
		if v[i] == 0 && i > rPods {
			continue
		}
		if i == rCPU {
			l[t.names[i]] = *resource.NewMilliQuantity(v[i], resource.DecimalSI)
		} else if i == rMem || i == rEph {
			l[t.names[i]] = *resource.NewQuantity(v[i], resource.BinarySI)
		} else {
			l[t.names[i]] = *resource.NewQuantity(v[i], resource.DecimalSI)
		}
	}
	return l
}

// describe renders the tracked, non-zero dimensions of v ("cpu=1500m
// memory=4Gi pods=1").
func (t *resTable) describe(v rvec) string {
	var b strings.Builder
	for i := 0; i < t.n; i++ {
		if v[i] == 0 && i > rPods {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(t.names[i]))
		b.WriteByte('=')
		b.WriteString(formatAmount(i, v[i]))
	}
	return b.String()
}

func formatAmount(dim int, v int64) string {
	switch dim {
	case rCPU:
		if v%1000 == 0 {
			return fmt.Sprint(v / 1000)
		}
		return fmt.Sprintf("%dm", v)
	case rMem, rEph:
		q := resource.NewQuantity(v, resource.BinarySI)
		return q.String()
	}
	return fmt.Sprint(v)
}

// podRequests computes what a pod needs on a node, as the kube-scheduler
// does: the larger of (app containers + restartable init containers) and
// the peak of the init phase (each init container plus the sidecars started
// before it), replaced by pod-level requests where set (cpu, memory,
// hugepages), plus the pod overhead, plus one pod slot. unknown names the
// first requested resource the table does not track ("" if none).
func (t *resTable) podRequests(pod *corev1.Pod) (v rvec, unknown corev1.ResourceName) {
	addList := func(dst *rvec, l corev1.ResourceList) {
		for name, q := range l {
			i := t.index(name)
			if i < 0 {
				if !q.IsZero() && unknown == "" {
					unknown = name
				}
				continue
			}
			dst[i] = satAdd(dst[i], quantityValue(name, &q))
		}
	}
	for i := range pod.Spec.Containers {
		addList(&v, pod.Spec.Containers[i].Resources.Requests)
	}
	if len(pod.Spec.InitContainers) > 0 {
		var sidecars, initPeak rvec
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			var r rvec
			addList(&r, c.Resources.Requests)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				v = v.add(r)
				sidecars = sidecars.add(r)
				initPeak = initPeak.max(sidecars)
			} else {
				initPeak = initPeak.max(r.add(sidecars))
			}
		}
		v = v.max(initPeak)
	}
	if pr := pod.Spec.Resources; pr != nil {
		for name, q := range pr.Requests {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				continue
			}
			i := t.index(name)
			if i < 0 {
				if !q.IsZero() && unknown == "" {
					unknown = name
				}
				continue
			}
			v[i] = quantityValue(name, &q)
		}
	}
	addList(&v, pod.Spec.Overhead)
	v[rPods] = 1
	return v, unknown
}

// requestedNames lists the resource names a pod requests anywhere.
func requestedNames(pod *corev1.Pod, into []corev1.ResourceName) []corev1.ResourceName {
	add := func(l corev1.ResourceList) {
		for name := range l {
			into = append(into, name)
		}
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Resources.Requests)
	}
	for i := range pod.Spec.InitContainers {
		add(pod.Spec.InitContainers[i].Resources.Requests)
	}
	if pod.Spec.Resources != nil {
		add(pod.Spec.Resources.Requests)
	}
	add(pod.Spec.Overhead)
	return into
}
