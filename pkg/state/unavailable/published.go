package unavailable

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Where the controller publishes the cache for read-only tools
// (`dovetail explain`): a ConfigMap in its namespace.
const (
	PublishedConfigMap = "dovetail-unavailable-offerings"
	PublishedKey       = "offerings.json"
)

// Published is one entry as published: JSON
// {"instanceType","zone","capacityType","until"}.
type Published struct {
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	CapacityType string    `json:"capacityType"`
	Until        time.Time `json:"until"`
}

// Encode writes entries for the ConfigMap.
func Encode(entries []Entry) ([]byte, error) {
	out := make([]Published, 0, len(entries))
	for _, e := range entries {
		out = append(out, Published{InstanceType: e.Offering.InstanceType, Zone: e.Offering.Zone, CapacityType: e.Offering.CapacityType, Until: e.Until.UTC()})
	}
	return json.Marshal(out)
}

// Decode reads what Encode wrote and returns the offerings still
// unavailable at now.
func Decode(data []byte, now time.Time) ([]cloudprovider.OfferingKey, error) {
	var in []Published
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("the published unavailable offerings do not parse: %w", err)
	}
	var out []cloudprovider.OfferingKey
	for _, p := range in {
		if p.InstanceType == "" || p.Zone == "" || p.CapacityType == "" {
			return nil, fmt.Errorf("a published unavailable offering lacks its instance type, zone or capacity type: %+v", p)
		}
		if now.Before(p.Until) {
			out = append(out, cloudprovider.OfferingKey{InstanceType: p.InstanceType, Zone: p.Zone, CapacityType: p.CapacityType})
		}
	}
	return out, nil
}
