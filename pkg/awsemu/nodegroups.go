package awsemu

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
)

// NodeGroup is a seeded EKS managed node group and the Auto Scaling group
// behind it, for `dovetail migrate`: the emulator serves them through EKS
// ListNodegroups and DescribeNodegroup and Auto Scaling
// DescribeAutoScalingGroups. Nothing launches instances for them.
type NodeGroup struct {
	Name string
	// InstanceTypes, e.g. ["m5.large", "m5.xlarge"].
	InstanceTypes []string
	// CapacityType: "ON_DEMAND" (default) or "SPOT".
	CapacityType string
	// AMIType: EKS's amiType, default "AL2023_x86_64_STANDARD".
	AMIType string
	// Labels and Taints of the node group (taint effects NO_SCHEDULE,
	// NO_EXECUTE, PREFER_NO_SCHEDULE).
	Labels map[string]string
	Taints []NodeGroupTaint
	// MinSize, MaxSize, DesiredSize of the scaling config.
	MinSize, MaxSize, DesiredSize int32
	// Subnets; default every subnet of the emulated VPC.
	Subnets []string
	// NodeRole is the role ARN; default
	// arn:aws:iam::<account>:role/eks-node-<cluster>.
	NodeRole string
	// ASGTags are extra tags of the Auto Scaling group, such as Cluster
	// Autoscaler's node-template tags. Every group gets
	// k8s.io/cluster-autoscaler/enabled=true and
	// k8s.io/cluster-autoscaler/<cluster>=owned unless CASDisabled.
	ASGTags     map[string]string
	CASDisabled bool
	// LaunchTemplate names an EC2 launch template of the emulator (created
	// with CreateLaunchTemplate) that the group uses; DescribeNodegroup
	// reports it with its id and LaunchTemplateVersion (default "1"). A
	// group whose template sets the AMI has AMIType "CUSTOM", and one whose
	// template sets the instance type has no InstanceTypes, as in EKS.
	LaunchTemplate        string
	LaunchTemplateVersion string
}

// SelfManagedGroup is a seeded Auto Scaling group that no EKS node group
// manages (eksctl's unmanaged groups, Terraform's self_managed_node_groups):
// DescribeAutoScalingGroups lists it with its launch template, either
// directly (no InstanceTypes) or in a mixed instances policy whose
// overrides are InstanceTypes. Nothing launches instances for it.
type SelfManagedGroup struct {
	Name string
	// LaunchTemplate names an emulator launch template; Version defaults
	// to "$Default".
	LaunchTemplate        string
	LaunchTemplateVersion string
	// InstanceTypes are the mixed instances policy's overrides.
	InstanceTypes []string
	// OnDemandPercentage is the mixed instances policy's
	// OnDemandPercentageAboveBaseCapacity (default 100; 0 means spot).
	OnDemandPercentage *int32
	// MinSize, MaxSize (default 10), DesiredSize.
	MinSize, MaxSize, DesiredSize int32
	// Subnets; default every subnet of the emulated VPC.
	Subnets []string
	// Tags of the group. Every group gets kubernetes.io/cluster/<cluster>=owned
	// and, unless CASDisabled, k8s.io/cluster-autoscaler/enabled=true and
	// k8s.io/cluster-autoscaler/<cluster>=owned.
	Tags        map[string]string
	CASDisabled bool
}

// NodeGroupTaint is a taint of a node group, spelled as EKS does.
type NodeGroupTaint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// nodeGroupStore holds an emulator's seeded groups, under a lock of its
// own (the other services' state is under Emulator.mu).
type nodeGroupStore struct {
	mu          sync.Mutex
	groups      []NodeGroup
	selfManaged []SelfManagedGroup
}

// AddSelfManagedGroups seeds Auto Scaling groups without an EKS node group
// (see SelfManagedGroup). A name used twice, by either kind of group, or a
// launch template the emulator does not have, is an error.
func (e *Emulator) AddSelfManagedGroups(gs ...SelfManagedGroup) error {
	e.mu.Lock()
	var subnets []string
	for _, s := range e.acct.subnets {
		subnets = append(subnets, s.ID)
	}
	missing := ""
	for _, g := range gs {
		if g.LaunchTemplate == "" || e.acct.ltByName[g.LaunchTemplate] == nil {
			missing = g.Name
			break
		}
	}
	cluster := e.opts.ClusterName
	e.mu.Unlock()
	if missing != "" {
		return fmt.Errorf("awsemu: self-managed group %q: no launch template of that name (create it first)", missing)
	}
	e.nodeGroups.mu.Lock()
	defer e.nodeGroups.mu.Unlock()
	have := e.nodeGroups.selfManaged
	for _, g := range gs {
		taken := slices.ContainsFunc(have, func(h SelfManagedGroup) bool { return h.Name == g.Name }) ||
			slices.ContainsFunc(e.nodeGroups.groups, func(h NodeGroup) bool { return asgName(cluster, h.Name) == g.Name })
		if g.Name == "" || taken {
			return fmt.Errorf("awsemu: self-managed group %q: empty or already seeded", g.Name)
		}
		if g.LaunchTemplateVersion == "" {
			g.LaunchTemplateVersion = "$Default"
		}
		if len(g.Subnets) == 0 {
			g.Subnets = slices.Clone(subnets)
		}
		if g.MaxSize == 0 {
			g.MaxSize = 10
		}
		have = append(have, g)
	}
	e.nodeGroups.selfManaged = have
	return nil
}

func (e *Emulator) seededSelfManaged() []SelfManagedGroup {
	e.nodeGroups.mu.Lock()
	defer e.nodeGroups.mu.Unlock()
	return slices.Clone(e.nodeGroups.selfManaged)
}

// AddNodeGroups seeds managed node groups (see NodeGroup). A name used
// twice is an error.
func (e *Emulator) AddNodeGroups(gs ...NodeGroup) error {
	e.mu.Lock()
	var subnets []string
	for _, s := range e.acct.subnets {
		subnets = append(subnets, s.ID)
	}
	cluster, account := e.opts.ClusterName, e.opts.AccountID
	missing := ""
	for _, g := range gs {
		if g.LaunchTemplate != "" && e.acct.ltByName[g.LaunchTemplate] == nil {
			missing = g.Name
		}
	}
	e.mu.Unlock()
	if missing != "" {
		return fmt.Errorf("awsemu: node group %q: no launch template of that name (create it first)", missing)
	}
	e.nodeGroups.mu.Lock()
	defer e.nodeGroups.mu.Unlock()
	have := e.nodeGroups.groups
	for _, g := range gs {
		if g.Name == "" || slices.ContainsFunc(have, func(h NodeGroup) bool { return h.Name == g.Name }) {
			return fmt.Errorf("awsemu: node group %q: empty or already seeded", g.Name)
		}
		if g.CapacityType == "" {
			g.CapacityType = "ON_DEMAND"
		}
		if g.AMIType == "" {
			g.AMIType = "AL2023_x86_64_STANDARD"
		}
		if len(g.Subnets) == 0 {
			g.Subnets = slices.Clone(subnets)
		}
		if g.NodeRole == "" {
			g.NodeRole = fmt.Sprintf("arn:aws:iam::%s:role/eks-node-%s", account, cluster)
		}
		if g.MaxSize == 0 {
			g.MaxSize = 10
		}
		if g.LaunchTemplate != "" && g.LaunchTemplateVersion == "" {
			g.LaunchTemplateVersion = "1"
		}
		have = append(have, g)
	}
	e.nodeGroups.groups = have
	return nil
}

func (e *Emulator) seededNodeGroups() []NodeGroup {
	e.nodeGroups.mu.Lock()
	defer e.nodeGroups.mu.Unlock()
	return slices.Clone(e.nodeGroups.groups)
}

func asgName(cluster, group string) string { return "eks-" + group + "-" + cluster }

// serveNodeGroups serves GET /clusters/NAME/node-groups (ListNodegroups)
// and GET /clusters/NAME/node-groups/GROUP (DescribeNodegroup); it reports
// whether the path was one of them.
func (e *Emulator) serveNodeGroups(w http.ResponseWriter, req *request, path string) bool {
	rest := strings.TrimPrefix(path, "/clusters/")
	cluster, sub, ok := strings.Cut(rest, "/node-groups")
	if !ok || req.httpReq.Method != http.MethodGet {
		return false
	}
	group := strings.TrimPrefix(sub, "/")
	if group == "" {
		req.action = "ListNodegroups"
	} else if !strings.Contains(group, "/") {
		req.action = "DescribeNodegroup"
	} else {
		return false
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeRESTError(w, req, aerr)
		return true
	}
	out, aerr := e.nodeGroupOp(cluster, group)
	e.finish(req, aerr)
	writeREST(w, req, out, aerr)
	return true
}

func (e *Emulator) nodeGroupOp(cluster, group string) (any, *apiError) {
	e.mu.Lock()
	o := e.opts
	created := e.acct.created
	ltIDs := map[string]string{}
	for name, lt := range e.acct.ltByName {
		ltIDs[name] = lt.ID
	}
	e.mu.Unlock()
	if cluster != o.ClusterName {
		return nil, newAPIError("ResourceNotFoundException", 404, "No cluster found for name: %s.", cluster)
	}
	groups := e.seededNodeGroups()
	if group == "" {
		names := []string{}
		for _, g := range groups {
			names = append(names, g.Name)
		}
		sort.Strings(names)
		return map[string]any{"nodegroups": names}, nil
	}
	for _, g := range groups {
		if g.Name != group {
			continue
		}
		labels := g.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		taints := g.Taints
		if taints == nil {
			taints = []NodeGroupTaint{}
		}
		instanceTypes := any(g.InstanceTypes)
		if len(g.InstanceTypes) == 0 {
			instanceTypes = nil // EKS omits them when the launch template sets the type
		}
		ng := map[string]any{
			"nodegroupName":  g.Name,
			"nodegroupArn":   fmt.Sprintf("arn:aws:eks:%s:%s:nodegroup/%s/%s/0", o.Region, o.AccountID, o.ClusterName, g.Name),
			"clusterName":    o.ClusterName,
			"version":        o.KubernetesVersion,
			"releaseVersion": "1.0.0-emulated",
			"createdAt":      epochSeconds(created),
			"status":         "ACTIVE",
			"capacityType":   g.CapacityType,
			"scalingConfig":  map[string]any{"minSize": g.MinSize, "maxSize": g.MaxSize, "desiredSize": g.DesiredSize},
			"instanceTypes":  instanceTypes,
			"subnets":        g.Subnets,
			"amiType":        g.AMIType,
			"nodeRole":       g.NodeRole,
			"labels":         labels,
			"taints":         taints,
			"diskSize":       20,
			"resources":      map[string]any{"autoScalingGroups": []map[string]string{{"name": asgName(o.ClusterName, g.Name)}}},
			"tags":           map[string]string{},
		}
		if g.LaunchTemplate != "" {
			ng["launchTemplate"] = map[string]string{"name": g.LaunchTemplate, "version": g.LaunchTemplateVersion, "id": ltIDs[g.LaunchTemplate]}
		}
		return map[string]any{"nodegroup": ng}, nil
	}
	return nil, newAPIError("ResourceNotFoundException", 404, "No node group found for name: %s.", group)
}

const autoScalingXMLNS = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

type asgTagXML struct {
	Key               string `xml:"Key"`
	Value             string `xml:"Value"`
	ResourceID        string `xml:"ResourceId"`
	ResourceType      string `xml:"ResourceType"`
	PropagateAtLaunch bool   `xml:"PropagateAtLaunch"`
}

type asgXML struct {
	Name              string      `xml:"AutoScalingGroupName"`
	ARN               string      `xml:"AutoScalingGroupARN"`
	MinSize           int32       `xml:"MinSize"`
	MaxSize           int32       `xml:"MaxSize"`
	DesiredCapacity   int32       `xml:"DesiredCapacity"`
	DefaultCooldown   int32       `xml:"DefaultCooldown"`
	AvailabilityZones []string    `xml:"AvailabilityZones>member"`
	HealthCheckType   string      `xml:"HealthCheckType"`
	CreatedTime       string      `xml:"CreatedTime"`
	VPCZoneIdentifier string      `xml:"VPCZoneIdentifier"`
	Tags              []asgTagXML `xml:"Tags>member"`
	// LaunchTemplate is a self-managed group's template without a mixed
	// instances policy.
	LaunchTemplate *asgLTSpecXML `xml:"LaunchTemplate,omitempty"`
	Mixed          *asgMixedXML  `xml:"MixedInstancesPolicy,omitempty"`
}

type asgLTSpecXML struct {
	ID      string `xml:"LaunchTemplateId"`
	Name    string `xml:"LaunchTemplateName"`
	Version string `xml:"Version"`
}

type asgOverrideXML struct {
	InstanceType string `xml:"InstanceType"`
}

type asgMixedXML struct {
	Spec         *asgLTSpecXML    `xml:"LaunchTemplate>LaunchTemplateSpecification,omitempty"`
	Overrides    []asgOverrideXML `xml:"LaunchTemplate>Overrides>member"`
	Distribution *struct {
		OnDemandBase       int32 `xml:"OnDemandBaseCapacity"`
		OnDemandPercentage int32 `xml:"OnDemandPercentageAboveBaseCapacity"`
	} `xml:"InstancesDistribution,omitempty"`
}

// serveAutoScaling serves the Auto Scaling query API:
// DescribeAutoScalingGroups (all groups, or AutoScalingGroupNames.member.N).
func (e *Emulator) serveAutoScaling(w http.ResponseWriter, req *request) {
	if req.action != "DescribeAutoScalingGroups" {
		aerr := errInvalidAction("autoscaling", req.action)
		writeQueryErrorNS(w, req, aerr, autoScalingXMLNS)
		return
	}
	if aerr := e.begin(req); aerr != nil {
		e.finish(req, aerr)
		writeQueryErrorNS(w, req, aerr, autoScalingXMLNS)
		return
	}
	want := req.params.Strings("AutoScalingGroupNames")
	e.mu.Lock()
	o := e.opts
	created := e.acct.created
	zoneOf := map[string]string{}
	for _, s := range e.acct.subnets {
		zoneOf[s.ID] = s.Zone.Name
	}
	ltIDs := map[string]string{}
	for name, lt := range e.acct.ltByName {
		ltIDs[name] = lt.ID
	}
	e.mu.Unlock()
	var groups []asgXML
	for _, g := range e.seededNodeGroups() {
		name := asgName(o.ClusterName, g.Name)
		if len(want) > 0 && !slices.Contains(want, name) {
			continue
		}
		a := asgXML{Name: name, ARN: fmt.Sprintf("arn:aws:autoscaling:%s:%s:autoScalingGroup:0:autoScalingGroupName/%s", o.Region, o.AccountID, name),
			MinSize: g.MinSize, MaxSize: g.MaxSize, DesiredCapacity: g.DesiredSize, DefaultCooldown: 300, HealthCheckType: "EC2",
			CreatedTime: created.UTC().Format("2006-01-02T15:04:05.000Z"), VPCZoneIdentifier: strings.Join(g.Subnets, ",")}
		for _, s := range g.Subnets {
			if z := zoneOf[s]; z != "" && !slices.Contains(a.AvailabilityZones, z) {
				a.AvailabilityZones = append(a.AvailabilityZones, z)
			}
		}
		tags := map[string]string{"eks:cluster-name": o.ClusterName, "eks:nodegroup-name": g.Name}
		if !g.CASDisabled {
			tags["k8s.io/cluster-autoscaler/enabled"] = "true"
			tags["k8s.io/cluster-autoscaler/"+o.ClusterName] = "owned"
		}
		for k, v := range g.ASGTags {
			tags[k] = v
		}
		keys := make([]string, 0, len(tags))
		for k := range tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a.Tags = append(a.Tags, asgTagXML{Key: k, Value: tags[k], ResourceID: name, ResourceType: "auto-scaling-group", PropagateAtLaunch: true})
		}
		a.Mixed = &asgMixedXML{}
		if g.LaunchTemplate != "" {
			a.Mixed.Spec = &asgLTSpecXML{ID: ltIDs[g.LaunchTemplate], Name: g.LaunchTemplate, Version: g.LaunchTemplateVersion}
		}
		for _, it := range g.InstanceTypes {
			a.Mixed.Overrides = append(a.Mixed.Overrides, asgOverrideXML{it})
		}
		groups = append(groups, a)
	}
	for _, g := range e.seededSelfManaged() {
		if len(want) > 0 && !slices.Contains(want, g.Name) {
			continue
		}
		a := asgXML{Name: g.Name, ARN: fmt.Sprintf("arn:aws:autoscaling:%s:%s:autoScalingGroup:0:autoScalingGroupName/%s", o.Region, o.AccountID, g.Name),
			MinSize: g.MinSize, MaxSize: g.MaxSize, DesiredCapacity: g.DesiredSize, DefaultCooldown: 300, HealthCheckType: "EC2",
			CreatedTime: created.UTC().Format("2006-01-02T15:04:05.000Z"), VPCZoneIdentifier: strings.Join(g.Subnets, ",")}
		for _, s := range g.Subnets {
			if z := zoneOf[s]; z != "" && !slices.Contains(a.AvailabilityZones, z) {
				a.AvailabilityZones = append(a.AvailabilityZones, z)
			}
		}
		tags := map[string]string{"kubernetes.io/cluster/" + o.ClusterName: "owned"}
		if !g.CASDisabled {
			tags["k8s.io/cluster-autoscaler/enabled"] = "true"
			tags["k8s.io/cluster-autoscaler/"+o.ClusterName] = "owned"
		}
		for k, v := range g.Tags {
			tags[k] = v
		}
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			a.Tags = append(a.Tags, asgTagXML{Key: k, Value: tags[k], ResourceID: g.Name, ResourceType: "auto-scaling-group", PropagateAtLaunch: true})
		}
		spec := &asgLTSpecXML{ID: ltIDs[g.LaunchTemplate], Name: g.LaunchTemplate, Version: g.LaunchTemplateVersion}
		if len(g.InstanceTypes) == 0 && g.OnDemandPercentage == nil {
			a.LaunchTemplate = spec
		} else {
			a.Mixed = &asgMixedXML{Spec: spec}
			for _, it := range g.InstanceTypes {
				a.Mixed.Overrides = append(a.Mixed.Overrides, asgOverrideXML{it})
			}
			pct := int32(100)
			if g.OnDemandPercentage != nil {
				pct = *g.OnDemandPercentage
			}
			a.Mixed.Distribution = &struct {
				OnDemandBase       int32 `xml:"OnDemandBaseCapacity"`
				OnDemandPercentage int32 `xml:"OnDemandPercentageAboveBaseCapacity"`
			}{0, pct}
		}
		groups = append(groups, a)
	}
	e.finish(req, nil)
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString(`<DescribeAutoScalingGroupsResponse xmlns="` + autoScalingXMLNS + `"><DescribeAutoScalingGroupsResult>`)
	enc := xml.NewEncoder(&buf)
	_ = enc.EncodeElement(struct {
		Groups []asgXML `xml:"member"`
	}{groups}, xml.StartElement{Name: xml.Name{Local: "AutoScalingGroups"}})
	_ = enc.Flush()
	buf.WriteString("</DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>" + req.requestID + "</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>")
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func writeQueryErrorNS(w http.ResponseWriter, req *request, aerr *apiError, ns string) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString(`<ErrorResponse xmlns="` + ns + `"><Error><Type>` + aerr.fault() + `</Type><Code>`)
	_ = xml.EscapeText(&buf, []byte(aerr.Code))
	buf.WriteString("</Code><Message>")
	_ = xml.EscapeText(&buf, []byte(aerr.Message))
	buf.WriteString("</Message></Error><RequestId>" + req.requestID + "</RequestId></ErrorResponse>")
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", req.requestID)
	w.WriteHeader(aerr.status())
	_, _ = w.Write(buf.Bytes())
}
