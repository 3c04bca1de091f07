package snapshot

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// ZoneKeys are the node label keys that name a volume's zone: the
// well-known topology.kubernetes.io/zone, the legacy
// failure-domain.beta.kubernetes.io/zone and the EBS CSI driver's
// topology.ebs.csi.aws.com/zone.
var ZoneKeys = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone, "topology.ebs.csi.aws.com/zone"}

// defaultClassAnnotation marks the cluster's default StorageClass.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// VolumeZones maps "namespace/claim" to the zones its volume can be used
// in, for engine.Input.Volumes:
//
//   - a claim bound to a PersistentVolume (spec.volumeName) gets the zones
//     of the PV's required node affinity (the union over its terms of the
//     zone keys' In values; a term that does not constrain the zone leaves
//     the claim unconstrained), or else of the PV's zone labels (values
//     may be joined with "__", as the legacy labels do);
//   - an unbound claim gets the zones of its StorageClass's
//     allowedTopologies (the named class, else the default class); a
//     WaitForFirstConsumer class without allowedTopologies provisions
//     where the pod lands, so it adds no constraint;
//   - claims without a zone constraint are left out (the engine reads an
//     absent claim as "any zone").
//
// Zones are sorted and unique. A bound claim whose PV is missing is left
// out.
func VolumeZones(pvcs []*corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume, classes []*storagev1.StorageClass) map[string][]string {
	pvByName := make(map[string]*corev1.PersistentVolume, len(pvs))
	for _, pv := range pvs {
		pvByName[pv.Name] = pv
	}
	classByName := make(map[string]*storagev1.StorageClass, len(classes))
	var defaultClass *storagev1.StorageClass
	for _, sc := range classes {
		classByName[sc.Name] = sc
		if sc.Annotations[defaultClassAnnotation] == "true" && (defaultClass == nil || sc.Name < defaultClass.Name) {
			defaultClass = sc
		}
	}
	out := map[string][]string{}
	for _, pvc := range pvcs {
		var zones []string
		var ok bool
		if pvc.Spec.VolumeName != "" {
			pv, found := pvByName[pvc.Spec.VolumeName]
			if !found {
				continue
			}
			zones, ok = pvZones(pv)
		} else {
			var sc *storagev1.StorageClass
			if pvc.Spec.StorageClassName != nil {
				sc = classByName[*pvc.Spec.StorageClassName]
			} else {
				sc = defaultClass
			}
			if sc == nil {
				continue
			}
			zones, ok = classZones(sc)
		}
		if !ok {
			continue
		}
		slices.Sort(zones)
		out[pvc.Namespace+"/"+pvc.Name] = slices.Compact(zones)
	}
	return out
}

// pvZones returns the zones a PV may be used in; ok is false when the PV
// does not constrain the zone.
func pvZones(pv *corev1.PersistentVolume) ([]string, bool) {
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil && len(na.Required.NodeSelectorTerms) > 0 {
		var zones []string
		for _, term := range na.Required.NodeSelectorTerms {
			tz, ok := termZones(term.MatchExpressions)
			if !ok {
				return nil, false
			}
			zones = append(zones, tz...)
		}
		return zones, true
	}
	for _, key := range ZoneKeys {
		if v, ok := pv.Labels[key]; ok {
			return strings.Split(v, "__"), true
		}
	}
	return nil, false
}

// termZones intersects the zone keys' In values within one term; ok is
// false when the term has none.
func termZones(exprs []corev1.NodeSelectorRequirement) ([]string, bool) {
	var zones []string
	constrained := false
	for _, e := range exprs {
		if !slices.Contains(ZoneKeys, e.Key) || e.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		if !constrained {
			zones = append([]string(nil), e.Values...)
			constrained = true
			continue
		}
		zones = slices.DeleteFunc(zones, func(z string) bool { return !slices.Contains(e.Values, z) })
	}
	return zones, constrained
}

func classZones(sc *storagev1.StorageClass) ([]string, bool) {
	if len(sc.AllowedTopologies) == 0 {
		return nil, false
	}
	var zones []string
	for _, term := range sc.AllowedTopologies {
		var exprs []corev1.NodeSelectorRequirement
		for _, e := range term.MatchLabelExpressions {
			exprs = append(exprs, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
		}
		tz, ok := termZones(exprs)
		if !ok {
			return nil, false
		}
		zones = append(zones, tz...)
	}
	return zones, true
}
