package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// hostPort is one host port a pod binds.
type hostPort struct {
	ip    string // "" and "0.0.0.0" mean every address
	proto corev1.Protocol
	port  int32
}

func (a hostPort) conflicts(b hostPort) bool {
	if a.port != b.port || a.proto != b.proto {
		return false
	}
	return a.ip == b.ip || a.ip == "" || b.ip == "" || a.ip == "0.0.0.0" || b.ip == "0.0.0.0"
}

func portsConflict(a, b []hostPort) bool {
	for _, x := range a {
		for _, y := range b {
			if x.conflicts(y) {
				return true
			}
		}
	}
	return false
}

func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{ip: p.HostIP, proto: proto, port: p.HostPort})
			}
		}
	}
	add(pod.Spec.Containers)
	// Restartable init containers keep their ports for the pod's life; the
	// kube-scheduler counts init container ports too.
	add(pod.Spec.InitContainers)
	return out
}

// prefKind is the kind of a soft constraint.
type prefKind uint8

const (
	prefNodeAffinity prefKind = iota
	prefPodAffinity
	prefPodAnti
	prefSpread
	prefTaint
)

func (k prefKind) String() string {
	switch k {
	case prefNodeAffinity:
		return "preferred node affinity"
	case prefPodAffinity:
		return "preferred pod affinity"
	case prefPodAnti:
		return "preferred pod anti-affinity"
	case prefSpread:
		return "ScheduleAnyway topology spread"
	}
	return "PreferNoSchedule taint"
}

// pref is one soft constraint of a pod.
type pref struct {
	kind   prefKind
	weight int32
	// term is the preferred node affinity term.
	term requirements.Requirements
	// group is the topology group of a pod (anti-)affinity or spread
	// preference.
	group int
}

// sclass groups pods with identical placement specs (everything but their
// labels).
type sclass struct {
	id       int
	first    *corev1.Pod
	ns       string
	req      rvec
	priority int32
	terms    []requirements.Requirements
	tols     []corev1.Toleration
	ports    []hostPort
	vol      zmask
	volNames []string
	// hard are the topology groups the pods own as requirements.
	hard  []int
	prefs []pref
	// masks lists the preference subsets to try, best first (bit i keeps
	// prefs[i]); the first is every preference.
	masks []uint32
	// unsupported, when set, makes every pod of the class unschedulable with
	// code Unsupported.
	unsupported string
}

// cclass is a set of interchangeable pods: same spec class and same group
// memberships.
type cclass struct {
	id     int
	sc     *sclass
	member []int
	pods   []int32
	// next is how many of pods have been taken for placement.
	next int
	// pcs are the placement classes by preference mask.
	pcs map[uint32]*pclass
	// topPool is the index of the first pool the class may use with every
	// preference kept (-1 if none): where its demand is accounted.
	topPool int
	// maskIdx is the preference subset the class is at; lastPC the
	// placement class of its last failed attempt.
	maskIdx int
	lastPC  *pclass
	// back holds pods taken off claims by the improvement phase, to place
	// again (last in, first out), each with its placement class.
	back []backPod
	// failed: construction could not place the remaining pods.
	failed bool
	// quotaG, when set, is a zone spread (maxSkew 1) whose only pending
	// members are this class's pods: instead of following the spread's
	// counts as they change, each zone gets a fixed quota of the class's
	// pods that ends the spread exactly balanced (quotaUsed counts what is
	// placed), so a claim can take its zone's share at once.
	quotaG    *tgroup
	quota     []int32
	quotaUsed []int32
	// blocked marks the fill generation in which the class cannot go onto
	// the claim being filled.
	blocked int
	// err, once set, is why the remaining pods are unschedulable.
	errCode ReasonCode
	errMsg  string
}

type backPod struct {
	pod int32
	pc  *pclass
}

// buildClasses parses every pod into spec classes and classes.
func (s *solver) buildClasses() {
	in := s.in
	specIdx := map[string]*sclass{}
	podSpec := make([]*sclass, len(in.Pods))
	var kb keyBuilder
	for i, pod := range in.Pods {
		path := field.NewPath("pods").Index(i)
		if pod == nil {
			s.errs = append(s.errs, field.Required(path, "must not be nil"))
			continue
		}
		if pod.Name == "" {
			s.errs = append(s.errs, field.Required(path.Child("metadata", "name"), "must not be empty"))
			continue
		}
		req, unknown := s.res.podRequests(pod)
		for d, v := range req {
			if v < 0 {
				s.errs = append(s.errs, field.Invalid(path.Key(pod.Namespace+"/"+pod.Name).Child("spec", "containers"), s.res.names[d], "requests must not be negative"))
			}
		}
		kb.reset()
		s.specKey(&kb, pod, req)
		if unknown != "" {
			kb.str("unknown:" + string(unknown))
		}
		sc, ok := specIdx[string(kb.b)]
		if !ok {
			sc = s.newSpecClass(i, pod, req, path.Key(pod.Namespace+"/"+pod.Name))
			if sc == nil {
				continue
			}
			if unknown != "" {
				sc.unsupported = fmt.Sprintf("requests %s, beyond the %d extended resources one solve tracks", unknown, nres-rExt)
			}
			specIdx[string(kb.b)] = sc
			sc.id = len(s.sclasses)
			s.sclasses = append(s.sclasses, sc)
		}
		podSpec[i] = sc
	}
	s.podSpec = podSpec
}

// buildMembership forms classes once every group exists.
func (s *solver) buildMembership() {
	in := s.in
	classIdx := map[string]*cclass{}
	s.podClass = make([]*cclass, len(in.Pods))
	var kb keyBuilder
	var member []int
	for i, pod := range in.Pods {
		sc := s.podSpec[i]
		if sc == nil {
			continue
		}
		member = s.memberships(pod.Namespace, pod.Labels, member[:0])
		kb.reset()
		kb.int(int64(sc.id))
		for _, g := range member {
			kb.int(int64(g))
		}
		c, ok := classIdx[string(kb.b)]
		if !ok {
			c = &cclass{id: len(s.classes), sc: sc, member: slices.Clone(member), pcs: map[uint32]*pclass{}}
			classIdx[string(kb.b)] = c
			s.classes = append(s.classes, c)
		}
		c.pods = append(c.pods, int32(i))
		s.podClass[i] = c
	}
}

// keyBuilder builds byte keys for grouping.
type keyBuilder struct{ b []byte }

func (k *keyBuilder) reset() { k.b = k.b[:0] }
func (k *keyBuilder) str(s string) {
	k.b = strconv.AppendInt(k.b, int64(len(s)), 10)
	k.b = append(k.b, ':')
	k.b = append(k.b, s...)
}
func (k *keyBuilder) int(v int64) {
	k.b = strconv.AppendInt(k.b, v, 10)
	k.b = append(k.b, ';')
}
func (k *keyBuilder) sortedMap(m map[string]string) {
	k.int(int64(len(m)))
	if len(m) == 1 {
		for a, b := range m {
			k.str(a)
			k.str(b)
		}
		return
	}
	keys := make([]string, 0, len(m))
	for a := range m {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	for _, a := range keys {
		k.str(a)
		k.str(m[a])
	}
}

func (k *keyBuilder) nsr(rs []corev1.NodeSelectorRequirement) {
	k.int(int64(len(rs)))
	for _, r := range rs {
		k.str(r.Key)
		k.str(string(r.Operator))
		k.int(int64(len(r.Values)))
		for _, v := range r.Values {
			k.str(v)
		}
	}
}

func (k *keyBuilder) labelSelector(ls *metav1.LabelSelector) {
	if ls == nil {
		k.str("nil")
		return
	}
	k.sortedMap(ls.MatchLabels)
	k.int(int64(len(ls.MatchExpressions)))
	for _, e := range ls.MatchExpressions {
		k.str(e.Key)
		k.str(string(e.Operator))
		k.int(int64(len(e.Values)))
		for _, v := range e.Values {
			k.str(v)
		}
	}
}

// labelValues appends the values of keys in labels ("" marks absence).
func (k *keyBuilder) labelValues(keys []string, l map[string]string) {
	k.int(int64(len(keys)))
	for _, key := range keys {
		v, ok := l[key]
		if !ok {
			k.str("\x00absent")
			continue
		}
		k.str(v)
	}
}

func (k *keyBuilder) affinityTerm(t *corev1.PodAffinityTerm, l map[string]string) {
	k.labelSelector(t.LabelSelector)
	k.int(int64(len(t.Namespaces)))
	for _, n := range t.Namespaces {
		k.str(n)
	}
	if t.NamespaceSelector == nil {
		k.str("nsnil")
	} else {
		k.labelSelector(t.NamespaceSelector)
	}
	k.str(t.TopologyKey)
	k.labelValues(t.MatchLabelKeys, l)
	k.labelValues(t.MismatchLabelKeys, l)
}

// specKey writes everything about a pod that decides where it may go,
// except the labels that make it a member of topology groups.
func (s *solver) specKey(k *keyBuilder, pod *corev1.Pod, req rvec) {
	spec := &pod.Spec
	k.str(pod.Namespace)
	for _, v := range req {
		k.int(v)
	}
	if spec.Priority != nil {
		k.int(int64(*spec.Priority))
	} else {
		k.str("")
	}
	k.sortedMap(spec.NodeSelector)
	if a := spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				k.int(int64(len(r.NodeSelectorTerms)))
				for _, t := range r.NodeSelectorTerms {
					k.nsr(t.MatchExpressions)
					k.nsr(t.MatchFields)
				}
			} else {
				k.str("noreq")
			}
			k.int(int64(len(na.PreferredDuringSchedulingIgnoredDuringExecution)))
			for _, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				k.int(int64(p.Weight))
				k.nsr(p.Preference.MatchExpressions)
				k.nsr(p.Preference.MatchFields)
			}
		} else {
			k.str("nona")
		}
		if pa := a.PodAffinity; pa == nil {
			k.str("nopa")
		} else {
			k.int(int64(len(pa.RequiredDuringSchedulingIgnoredDuringExecution)))
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				k.affinityTerm(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i], pod.Labels)
			}
			k.int(int64(len(pa.PreferredDuringSchedulingIgnoredDuringExecution)))
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
				k.int(int64(w.Weight))
				k.affinityTerm(&w.PodAffinityTerm, pod.Labels)
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			k.int(int64(len(pa.RequiredDuringSchedulingIgnoredDuringExecution)))
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				k.affinityTerm(&pa.RequiredDuringSchedulingIgnoredDuringExecution[i], pod.Labels)
			}
			k.int(int64(len(pa.PreferredDuringSchedulingIgnoredDuringExecution)))
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
				k.int(int64(w.Weight))
				k.affinityTerm(&w.PodAffinityTerm, pod.Labels)
			}
		} else {
			k.str("noanti")
		}
	} else {
		k.str("noaff")
	}
	k.int(int64(len(spec.Tolerations)))
	for _, t := range spec.Tolerations {
		k.str(t.Key)
		k.str(string(t.Operator))
		k.str(t.Value)
		k.str(string(t.Effect))
	}
	spreads := spec.TopologySpreadConstraints
	if s.opts.IgnoreTopologySpread {
		spreads = nil
	}
	k.int(int64(len(spreads)))
	for i := range spreads {
		c := &spreads[i]
		k.int(int64(c.MaxSkew))
		k.str(c.TopologyKey)
		k.str(string(c.WhenUnsatisfiable))
		k.labelSelector(c.LabelSelector)
		if c.MinDomains != nil {
			k.int(int64(*c.MinDomains))
		} else {
			k.str("")
		}
		if c.NodeAffinityPolicy != nil {
			k.str(string(*c.NodeAffinityPolicy))
		} else {
			k.str("")
		}
		if c.NodeTaintsPolicy != nil {
			k.str(string(*c.NodeTaintsPolicy))
		} else {
			k.str("")
		}
		k.labelValues(c.MatchLabelKeys, pod.Labels)
	}
	for _, hp := range podHostPorts(pod) {
		k.str(hp.ip)
		k.str(string(hp.proto))
		k.int(int64(hp.port))
	}
	k.str("|")
	if len(s.in.Volumes) > 0 {
		vol, _ := s.volumeZones(pod)
		k.int(int64(vol))
	}
}

// volumeZones intersects the zones of the pod's PVC-backed volumes. names
// lists the claims that constrain.
func (s *solver) volumeZones(pod *corev1.Pod) (zmask, []string) {
	m := allZones
	var names []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var claim string
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = pod.Name + "-" + v.Name
		default:
			continue
		}
		zones, ok := s.in.Volumes[pod.Namespace+"/"+claim]
		if !ok {
			continue
		}
		var zm zmask
		for _, z := range zones {
			if zi, ok := s.zoneIdx[z]; ok {
				zm |= 1 << uint(zi)
			}
		}
		m &= zm
		names = append(names, claim)
	}
	return m, names
}

// newSpecClass parses the placement constraints of a pod.
func (s *solver) newSpecClass(i int, pod *corev1.Pod, req rvec, path *field.Path) *sclass {
	sc := &sclass{first: pod, ns: pod.Namespace, req: req, tols: pod.Spec.Tolerations, ports: podHostPorts(pod)}
	if pod.Spec.Priority != nil {
		sc.priority = *pod.Spec.Priority
	}
	terms, err := podTerms(pod)
	if err != nil {
		s.errs = append(s.errs, field.Invalid(path.Child("spec"), err.Error(), "malformed node selector or node affinity"))
		return nil
	}
	sc.terms = terms
	sc.vol, sc.volNames = s.volumeZones(pod)
	respect := s.opts.PreferencePolicy != PreferenceIgnore
	bad := false
	report := func(p *field.Path, err error) {
		s.errs = append(s.errs, field.Invalid(p, "", err.Error()))
		bad = true
	}
	// Topology spread.
	spreads := pod.Spec.TopologySpreadConstraints
	if s.opts.IgnoreTopologySpread {
		spreads = nil
	}
	for ci := range spreads {
		c := &spreads[ci]
		cp := path.Child("spec", "topologySpreadConstraints").Index(ci)
		if c.MaxSkew <= 0 {
			report(cp.Child("maxSkew"), fmt.Errorf("must be greater than zero, got %d", c.MaxSkew))
			continue
		}
		if c.TopologyKey == "" {
			report(cp.Child("topologyKey"), fmt.Errorf("must not be empty"))
			continue
		}
		sel, err := selectorWithKeys(c.LabelSelector, c.MatchLabelKeys, nil, pod.Labels)
		if err != nil {
			report(cp.Child("labelSelector"), err)
			continue
		}
		g := groupSpec{kind: gSpread, key: c.TopologyKey, ns: []string{pod.Namespace}, sel: sel, maxSkew: c.MaxSkew, minDomains: 1}
		hard := c.WhenUnsatisfiable != corev1.ScheduleAnyway
		if hard && c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				report(cp.Child("minDomains"), fmt.Errorf("must be greater than zero, got %d", *c.MinDomains))
				continue
			}
			g.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
			// A pod with no node selection at all filters nothing.
			for _, t := range terms {
				if t.Len() > 0 {
					g.filterTerms = terms
					break
				}
			}
		}
		if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
			g.filterTols = pod.Spec.Tolerations
			g.honorTaints = true
		}
		gi := s.group(g)
		if hard {
			sc.hard = append(sc.hard, gi)
		} else if respect {
			sc.prefs = append(sc.prefs, pref{kind: prefSpread, weight: 1, group: gi})
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			for ti := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &pa.RequiredDuringSchedulingIgnoredDuringExecution[ti]
				gi, err := s.termGroup(gAffinity, t, pod)
				if err != nil {
					report(path.Child("spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution").Index(ti), err)
					continue
				}
				sc.hard = append(sc.hard, gi)
			}
			for ti := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[ti]
				gi, err := s.termGroup(gAffinity, &w.PodAffinityTerm, pod)
				if err != nil {
					report(path.Child("spec", "affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution").Index(ti), err)
					continue
				}
				if respect {
					sc.prefs = append(sc.prefs, pref{kind: prefPodAffinity, weight: w.Weight, group: gi})
				}
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for ti := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &pa.RequiredDuringSchedulingIgnoredDuringExecution[ti]
				gi, err := s.termGroup(gAnti, t, pod)
				if err != nil {
					report(path.Child("spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution").Index(ti), err)
					continue
				}
				sc.hard = append(sc.hard, gi)
			}
			for ti := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				w := &pa.PreferredDuringSchedulingIgnoredDuringExecution[ti]
				gi, err := s.termGroup(gAnti, &w.PodAffinityTerm, pod)
				if err != nil {
					report(path.Child("spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution").Index(ti), err)
					continue
				}
				if respect {
					sc.prefs = append(sc.prefs, pref{kind: prefPodAnti, weight: w.Weight, group: gi})
				}
			}
		}
		if na := a.NodeAffinity; na != nil && respect {
			for ti, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				rs, err := requirements.FromNodeSelectorTerm(p.Preference)
				if err != nil {
					report(path.Child("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution").Index(ti).Child("preference"), err)
					continue
				}
				sc.prefs = append(sc.prefs, pref{kind: prefNodeAffinity, weight: p.Weight, term: rs})
			}
		}
	}
	if respect {
		// Avoiding PreferNoSchedule taints the pod does not tolerate is a
		// preference too (only worth tracking when some taint has it).
		if s.hasPreferTaints {
			sc.prefs = append(sc.prefs, pref{kind: prefTaint, weight: 1})
		}
	}
	if bad {
		return nil
	}
	// Order preferences by weight (highest first), then kind, stably.
	slices.SortStableFunc(sc.prefs, func(a, b pref) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.kind, b.kind)
	})
	sc.masks = prefMasks(sc.prefs)
	_ = i
	return sc
}

// maxEnumPrefs bounds the preferences whose subsets are enumerated; beyond
// it preferences are dropped one at a time, lowest weight first.
const maxEnumPrefs = 10

// prefMasks orders the subsets of prefs to try: highest kept total weight
// first; at equal weight the subset keeping the earlier (heavier)
// preferences first. The last mask is always 0 (no preference).
func prefMasks(prefs []pref) []uint32 {
	n := len(prefs)
	if n == 0 {
		return []uint32{0}
	}
	if n > maxEnumPrefs {
		out := make([]uint32, 0, n+1)
		for k := n; k >= 0; k-- {
			out = append(out, uint32(1)<<uint(k)-1)
		}
		return out
	}
	masks := make([]uint32, 1<<uint(n))
	weight := make([]int64, 1<<uint(n))
	for m := range masks {
		masks[m] = uint32(m)
		for i := range n {
			if m&(1<<uint(i)) != 0 {
				weight[m] += int64(prefs[i].weight)
			}
		}
	}
	slices.SortStableFunc(masks, func(a, b uint32) int {
		if c := cmp.Compare(weight[b], weight[a]); c != 0 {
			return c
		}
		// Prefer keeping lower-index (heavier) preferences: compare the
		// bit-reversed masks so bit 0 is the most significant.
		ra, rb := reverseBits(a, n), reverseBits(b, n)
		return cmp.Compare(rb, ra)
	})
	return masks
}

func reverseBits(m uint32, n int) uint32 {
	var r uint32
	for i := range n {
		if m&(1<<uint(i)) != 0 {
			r |= 1 << uint(n-1-i)
		}
	}
	return r
}

// selectorWithKeys converts a label selector and adds "key In [v]" for each
// matchLabelKeys key the pod has, and "key NotIn [v]" for each
// mismatchLabelKeys key.
func selectorWithKeys(ls *metav1.LabelSelector, match, mismatch []string, podLabels map[string]string) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	if labels.MatchesNothing(sel) || len(match)+len(mismatch) == 0 {
		return sel, nil
	}
	for _, k := range match {
		v, ok := podLabels[k]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(k, selection.In, []string{v})
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*r)
	}
	for _, k := range mismatch {
		v, ok := podLabels[k]
		if !ok {
			continue
		}
		r, err := labels.NewRequirement(k, selection.NotIn, []string{v})
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*r)
	}
	return sel, nil
}

// termGroup returns the group of a pod (anti-)affinity term owned by pod.
func (s *solver) termGroup(kind gkind, t *corev1.PodAffinityTerm, pod *corev1.Pod) (int, error) {
	if t.TopologyKey == "" {
		return 0, fmt.Errorf("topologyKey must not be empty")
	}
	sel, err := selectorWithKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, pod.Labels)
	if err != nil {
		return 0, err
	}
	g := groupSpec{kind: kind, key: t.TopologyKey, sel: sel}
	switch {
	case t.NamespaceSelector != nil:
		nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return 0, fmt.Errorf("namespaceSelector: %w", err)
		}
		if nsSel.Empty() {
			g.nsAll = true
		} else {
			g.nsSel = nsSel
			g.ns = slices.Clone(t.Namespaces)
		}
	case len(t.Namespaces) > 0:
		g.ns = slices.Clone(t.Namespaces)
	default:
		g.ns = []string{pod.Namespace}
	}
	return s.group(g), nil
}

// memberships appends the groups whose selector and namespaces match a pod.
func (s *solver) memberships(ns string, l map[string]string, out []int) []int {
	if len(s.groups) == 0 {
		return out
	}
	set := labels.Set(l)
	seen := s.memberScratch[:0]
	check := func(gi int) {
		g := s.groups[gi]
		if g.matchesNS(s, ns) && g.sel.Matches(set) {
			seen = append(seen, gi)
		}
	}
	for k, v := range l {
		for _, gi := range s.groupIndex[kvKey{k, v}] {
			check(gi)
		}
	}
	for _, gi := range s.groupScan {
		check(gi)
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)
	out = append(out, seen...)
	s.memberScratch = seen
	return out
}

type kvKey struct{ k, v string }

// describeSelector renders a selector for messages.
func describeSelector(sel labels.Selector) string {
	if labels.MatchesNothing(sel) {
		return "<nothing>"
	}
	if sel.Empty() {
		return "<everything>"
	}
	return sel.String()
}

func describeNS(g *tgroup) string {
	switch {
	case g.nsAll:
		return "all namespaces"
	case g.nsSel != nil:
		return "namespaces " + strings.Join(g.ns, ",") + " and those matching " + g.nsSel.String()
	}
	return "namespace " + strings.Join(g.ns, ",")
}
