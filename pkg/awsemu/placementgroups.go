package awsemu

import (
	"strconv"
	"time"
)

// Placement strategies, spread levels and the state of a placement group
// as EC2 names them.
const (
	PlacementCluster   = "cluster"
	PlacementPartition = "partition"
	PlacementSpread    = "spread"

	placementAvailable = "available"
)

// PlacementGroup is a snapshot of one emulated placement group.
type PlacementGroup struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	// PartitionCount is set for the partition strategy (1..7, default 2
	// as EC2 does when the request leaves it out); SpreadLevel for spread
	// (rack).
	PartitionCount int               `json:"partitionCount,omitempty"`
	SpreadLevel    string            `json:"spreadLevel,omitempty"`
	State          string            `json:"state"`
	Created        time.Time         `json:"created"`
	Tags           map[string]string `json:"tags,omitempty"`
}

func (g *PlacementGroup) clone() PlacementGroup {
	c := *g
	c.Tags = cloneTags(g.Tags)
	return c
}

// PlacementGroups returns the account's placement groups in creation
// order.
func (e *Emulator) PlacementGroups() []PlacementGroup {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []PlacementGroup
	for _, g := range e.acct.placementGroups {
		out = append(out, g.clone())
	}
	return out
}

// placementGroup finds a group by name or ID. Callers hold mu.
func (e *Emulator) placementGroup(name, id string) *PlacementGroup {
	for _, g := range e.acct.placementGroups {
		if name != "" && g.Name == name || id != "" && g.ID == id {
			return g
		}
	}
	return nil
}

func errPlacementGroupUnknown(what string) *apiError {
	return newAPIError("InvalidPlacementGroup.Unknown", 400, "The Placement Group '%s' is unknown.", what)
}

func (e *Emulator) createPlacementGroup(req *request) (any, *apiError) {
	p := req.params
	name := p.Get("GroupName")
	if name == "" {
		return nil, errMissingParameter("GroupName")
	}
	if len(name) > 255 {
		return nil, errInvalidParameterValue("GroupName", name, "Up to 255 ASCII characters.")
	}
	if e.placementGroup(name, "") != nil {
		return nil, newAPIError("InvalidPlacementGroup.Duplicate", 400, "The Placement Group '%s' already exists.", name)
	}
	g := &PlacementGroup{Name: name, Strategy: p.Get("Strategy"), State: placementAvailable, Tags: map[string]string{}}
	count, hasCount, aerr := p.Int("PartitionCount")
	if aerr != nil {
		return nil, aerr
	}
	level := p.Get("SpreadLevel")
	switch g.Strategy {
	case PlacementCluster:
	case PlacementPartition:
		g.PartitionCount = 2
		if hasCount {
			if count < 1 || count > 7 {
				return nil, errInvalidParameterValue("PartitionCount", strconv.FormatInt(count, 10), "A partition placement group can have 1 to 7 partitions.")
			}
			g.PartitionCount = int(count)
		}
	case PlacementSpread:
		switch level {
		case "", "rack":
			g.SpreadLevel = "rack"
		case "host":
			return nil, errInvalidParameterValue("SpreadLevel", level, "Host-level spread placement groups are only supported on AWS Outposts.")
		default:
			return nil, errInvalidParameterValue("SpreadLevel", level, "Valid values are host, rack.")
		}
	case "":
		return nil, errMissingParameter("Strategy")
	default:
		return nil, errInvalidParameterValue("Strategy", g.Strategy, "Valid values are cluster, partition, spread.")
	}
	if hasCount && g.Strategy != PlacementPartition {
		return nil, errInvalidParameterCombination("PartitionCount is valid only for the partition strategy.")
	}
	if level != "" && g.Strategy != PlacementSpread {
		return nil, errInvalidParameterCombination("SpreadLevel is valid only for the spread strategy.")
	}
	for _, key := range []string{"TagSpecification", "TagSpecifications"} {
		specs, aerr := parseTagSpecs(p, key)
		if aerr != nil {
			return nil, aerr
		}
		for rt, ts := range specs {
			if rt != "placement-group" {
				return nil, errInvalidParameterValue("TagSpecification.ResourceType", rt, "CreatePlacementGroup tags only the placement-group resource type.")
			}
			for k, v := range ts {
				g.Tags[k] = v
			}
		}
	}
	g.ID = e.newID("pg")
	g.Created = e.clock.Now().UTC()
	e.acct.placementGroups = append(e.acct.placementGroups, g)
	return placementGroupResultXML{PlacementGroup: e.placementGroupToXML(g)}, nil
}

func (e *Emulator) describePlacementGroups(req *request) (any, *apiError) {
	p := req.params
	filters, aerr := parseFilters(p)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := checkFilterNames(filters, placementGroupFields(&PlacementGroup{})); aerr != nil {
		return nil, aerr
	}
	list := e.acct.placementGroups
	names, ids := p.Strings("GroupName"), p.Strings("GroupId")
	if len(names) > 0 || len(ids) > 0 {
		var sel []*PlacementGroup
		for _, n := range names {
			g := e.placementGroup(n, "")
			if g == nil {
				return nil, errPlacementGroupUnknown(n)
			}
			sel = append(sel, g)
		}
		for _, id := range ids {
			g := e.placementGroup("", id)
			if g == nil {
				return nil, errPlacementGroupUnknown(id)
			}
			sel = append(sel, g)
		}
		list = sel
	}
	out := describePlacementGroupsXML{}
	out.PlacementGroupSet.Items = []placementGroupXML{}
	for _, g := range list {
		ok, aerr := matchFilters(filters, g.Tags, placementGroupFields(g))
		if aerr != nil {
			return nil, aerr
		}
		if ok {
			out.PlacementGroupSet.Items = append(out.PlacementGroupSet.Items, e.placementGroupToXML(g))
		}
	}
	return out, nil
}

// placementGroupFields answers DescribePlacementGroups' filters.
func placementGroupFields(g *PlacementGroup) fieldFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "group-name":
			return []string{g.Name}, true
		case "state":
			return []string{g.State}, true
		case "strategy":
			return []string{g.Strategy}, true
		case "spread-level":
			return []string{g.SpreadLevel}, true
		}
		return nil, false
	}
}

func (e *Emulator) deletePlacementGroup(req *request) (any, *apiError) {
	name := req.params.Get("GroupName")
	if name == "" {
		return nil, errMissingParameter("GroupName")
	}
	g := e.placementGroup(name, "")
	if g == nil {
		return nil, errPlacementGroupUnknown(name)
	}
	for _, in := range e.acct.instances {
		if in.PlacementGroupID == g.ID && in.State != StateTerminated {
			return nil, newAPIError("InvalidPlacementGroup.InUse", 400, "There are instances in the Placement Group '%s'.", name)
		}
	}
	for i, x := range e.acct.placementGroups {
		if x == g {
			e.acct.placementGroups = append(e.acct.placementGroups[:i:i], e.acct.placementGroups[i+1:]...)
			break
		}
	}
	return returnXML{Return: true}, nil
}

func (e *Emulator) placementGroupToXML(g *PlacementGroup) placementGroupXML {
	return placementGroupXML{
		GroupName: g.Name, GroupID: g.ID, Strategy: g.Strategy, State: g.State,
		PartitionCount: g.PartitionCount, SpreadLevel: g.SpreadLevel,
		GroupArn: "arn:aws:ec2:" + e.opts.Region + ":" + e.opts.AccountID + ":placement-group/" + g.Name,
		TagSet:   tagSet(g.Tags),
	}
}

type placementGroupXML struct {
	GroupName      string      `xml:"groupName"`
	State          string      `xml:"state"`
	Strategy       string      `xml:"strategy"`
	PartitionCount int         `xml:"partitionCount,omitempty"`
	GroupID        string      `xml:"groupId"`
	TagSet         set[tagXML] `xml:"tagSet"`
	GroupArn       string      `xml:"groupArn"`
	SpreadLevel    string      `xml:"spreadLevel,omitempty"`
}

type placementGroupResultXML struct {
	PlacementGroup placementGroupXML `xml:"placementGroup"`
}

type describePlacementGroupsXML struct {
	PlacementGroupSet set[placementGroupXML] `xml:"placementGroupSet"`
}

// placementFor is the placement group (and partition) a launch from
// template data goes into in zone: nil without one. It refuses, as EC2
// does, a group that does not exist, a partition number beyond the
// group's partitions or on a group of another strategy, and a second zone
// for a cluster group. Without a partition number, a partition group's
// instances go round the partitions. Callers hold mu.
func (e *Emulator) placementFor(d ltData, zone string) (*PlacementGroup, int, *apiError) {
	if d.PlacementGroupName == "" && d.PlacementGroupID == "" {
		return nil, 0, nil
	}
	g := e.placementGroup(d.PlacementGroupName, d.PlacementGroupID)
	if g == nil {
		return nil, 0, errPlacementGroupUnknown(d.PlacementGroupName + d.PlacementGroupID)
	}
	members := 0
	for _, in := range e.acct.instances {
		if in.PlacementGroupID != g.ID || in.State == StateTerminated {
			continue
		}
		members++
		if g.Strategy == PlacementCluster && in.Zone != zone {
			return nil, 0, newAPIError("InsufficientInstanceCapacity", 400,
				"The cluster placement group '%s' has instances in %s; it cannot launch in %s.", g.Name, in.Zone, zone)
		}
	}
	partition := 0
	if n := d.PlacementPartitionNumber; n != nil {
		if g.Strategy != PlacementPartition || *n < 1 || int(*n) > g.PartitionCount {
			return nil, 0, errInvalidParameterValue("Placement.PartitionNumber", strconv.FormatInt(*n, 10),
				"The partition number must be between 1 and the partition count of a partition placement group.")
		}
		partition = int(*n)
	} else if g.Strategy == PlacementPartition {
		partition = members%g.PartitionCount + 1
	}
	return g, partition, nil
}
