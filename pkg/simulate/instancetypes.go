package simulate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// CatalogFile is the format of an --instance-types file (JSON, or the same
// in YAML):
//
//	{"instanceTypes": [{
//	  "name": "m5.large",
//	  "labels": {"kubernetes.io/arch": "amd64"},
//	  "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"},
//	  "overhead": {"cpu": "70m", "memory": "1Gi"},
//	  "offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.04, "available": true}]
//	}]}
//
// Capacity may name any resource; overhead is optional (allocatable =
// capacity - overhead); the name becomes the node.kubernetes.io/instance-type
// label when the labels lack it; an offering's available defaults to true.
type CatalogFile struct {
	InstanceTypes []CatalogType `json:"instanceTypes"`
}

// CatalogType is one instance type of a CatalogFile.
type CatalogType struct {
	Name      string              `json:"name"`
	Labels    map[string]string   `json:"labels,omitempty"`
	Capacity  corev1.ResourceList `json:"capacity"`
	Overhead  corev1.ResourceList `json:"overhead,omitempty"`
	Offerings []CatalogOffering   `json:"offerings"`
}

// CatalogOffering is one offering of a CatalogType.
type CatalogOffering struct {
	Zone         string  `json:"zone"`
	ZoneID       string  `json:"zoneID,omitempty"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    *bool   `json:"available,omitempty"`
}

var capacityTypes = []string{cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved, cloudprovider.CapacityTypeSpot}

// ReadCatalog parses a catalog file into instance types, keeping only the
// offerings in zones (all offerings when zones is empty). Errors are
// InputErrors naming the file, with field paths such as
// instanceTypes[2].offerings[0].price.
func ReadCatalog(file string, data []byte, zones []string) ([]*cloudprovider.InstanceType, error) {
	var cf CatalogFile
	if err := yaml.UnmarshalStrict(data, &cf); err != nil {
		o := Origin{File: file, Document: 1, Line: 1}
		var generic any
		if yaml.Unmarshal(data, &generic) == nil {
			if bqs := findBadQuantities(generic, nil); len(bqs) > 0 {
				var fes field.ErrorList
				for _, bq := range bqs {
					fes = append(fes, field.Invalid(segmentsPath(nil, bq.at, true), bq.value, "not a quantity: "+bq.err.Error()))
				}
				return nil, InputErrors{o.errorf("", "", fes, nil)}
			}
		}
		return nil, InputErrors{o.errorf("", "", nil, fmt.Errorf("not a valid instance-type catalog: %w", err))}
	}
	var errs field.ErrorList
	root := field.NewPath("instanceTypes")
	if len(cf.InstanceTypes) == 0 {
		errs = append(errs, field.Required(root, "the catalog lists no instance types"))
	}
	seen := map[string]bool{}
	out := make([]*cloudprovider.InstanceType, 0, len(cf.InstanceTypes))
	for i, ct := range cf.InstanceTypes {
		p := root.Index(i)
		if ct.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if seen[ct.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), ct.Name))
		}
		seen[ct.Name] = true
		if len(ct.Capacity) == 0 {
			errs = append(errs, field.Required(p.Child("capacity"), "an instance type needs a capacity (cpu, memory, pods, ...)"))
		}
		errs = append(errs, checkAmounts(ct.Capacity, p.Child("capacity"))...)
		errs = append(errs, checkAmounts(ct.Overhead, p.Child("overhead"))...)
		it := &cloudprovider.InstanceType{
			Name:     ct.Name,
			Labels:   map[string]string{},
			Capacity: ct.Capacity,
			Overhead: cloudprovider.Overhead{KubeReserved: ct.Overhead},
		}
		for k, v := range ct.Labels {
			it.Labels[k] = v
		}
		if _, ok := it.Labels[corev1.LabelInstanceTypeStable]; !ok {
			it.Labels[corev1.LabelInstanceTypeStable] = ct.Name
		}
		for j, o := range ct.Offerings {
			op := p.Child("offerings").Index(j)
			if o.Zone == "" {
				errs = append(errs, field.Required(op.Child("zone"), ""))
			}
			if !slices.Contains(capacityTypes, o.CapacityType) {
				errs = append(errs, field.NotSupported(op.Child("capacityType"), o.CapacityType, capacityTypes))
			}
			if !validPrice(o.Price) {
				errs = append(errs, field.Invalid(op.Child("price"), o.Price, fmt.Sprintf("must be a price per hour between 0 and %g", MaxPricePerHour)))
			}
			if len(zones) > 0 && !slices.Contains(zones, o.Zone) {
				continue
			}
			it.Offerings = append(it.Offerings, cloudprovider.Offering{
				Zone: o.Zone, ZoneID: o.ZoneID, CapacityType: o.CapacityType, Price: o.Price,
				Available: o.Available == nil || *o.Available,
			})
		}
		out = append(out, it)
	}
	if len(errs) > 0 {
		return nil, InputErrors{Origin{File: file, Document: 1, Line: 1}.errorf("", "", errs, nil)}
	}
	return out, nil
}

// MaxPricePerHour bounds a price a catalog file or an annotation may state
// (the dearest EC2 instance costs a few hundred dollars an hour): sums of
// such prices stay finite and exact enough to print.
const MaxPricePerHour = 1e6

func validPrice(p float64) bool {
	return p >= 0 && p <= MaxPricePerHour // false for NaN
}

// checkAmounts refuses negative amounts and amounts the engine cannot
// represent (engine.QuantityInRange).
func checkAmounts(l corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResources(l) {
		q := l[name]
		switch {
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must not be negative"))
		case !engine.QuantityInRange(name, q):
			limit := resource.NewQuantity(engine.MaxQuantity, resource.BinarySI)
			if name == corev1.ResourceCPU {
				limit = resource.NewMilliQuantity(engine.MaxQuantity, resource.DecimalSI)
			}
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "out of range: at most "+limit.String()))
		}
	}
	return errs
}

func sortedResources(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
