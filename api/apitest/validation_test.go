package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

const baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: NAME}
spec:
  weight: 10
  template:
    metadata:
      labels: {team: b}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      taints: [{key: team, value: b, effect: NoSchedule}]
      expireAfter: 720h
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets: [{nodes: "10%"}]
  limits: {cpu: "1000", memory: 1000Gi}
`

const baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: NAME}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
  resources: {requests: {cpu: "1", memory: 1Gi}}
`

const baseEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: NAME}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{tags: {role: local}}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: local}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: local}}]
  role: KarpenterNodeRole-local
`

// reqs writes a merge patch that replaces the NodePool's requirements.
func reqs(list string) string {
	return "spec: {template: {spec: {requirements: " + list + "}}}"
}

// budgets writes a merge patch that replaces the NodePool's budgets.
func budgets(list string) string { return "spec: {disruption: {budgets: " + list + "}}" }

// manyRequirements returns a NodePool requirements patch with n entries.
func manyRequirements(n int) string {
	list := "["
	for i := range n {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf("{key: example.com/k%d, operator: Exists}", i)
	}
	return reqs(list + "]")
}

func manyBudgets(n int) string {
	list := "["
	for i := range n {
		if i > 0 {
			list += ","
		}
		list += `{nodes: "1"}`
	}
	return budgets(list + "]")
}

func object(t *testing.T, base, name, patch string) *unstructured.Unstructured {
	t.Helper()
	u := fromYAML(t, strings.ReplaceAll(base, "NAME", name))
	if patch != "" {
		mergePatch(t, u.Object, patch)
	}
	return u
}

type invalidCase struct {
	name  string
	base  string
	patch string
	field string // substring of the field path the error must name
	msg   string // optional substring of that cause's message
}

func invalidCases() []invalidCase {
	np, nc, ec2 := baseNodePool, baseNodeClaim, baseEC2NodeClass
	return append([]invalidCase{
		// NodePool requirements.
		{name: "unknown operator", base: np, patch: reqs(`[{key: a, operator: Near, values: [x]}]`), field: "spec.template.spec.requirements[0].operator", msg: "Unsupported value"},
		{name: "In without values", base: np, patch: reqs(`[{key: a, operator: In}]`), field: "spec.template.spec.requirements[0].values", msg: "operator In"},
		{name: "In with empty values", base: np, patch: reqs(`[{key: a, operator: In, values: []}]`), field: "spec.template.spec.requirements[0].values"},
		{name: "minValues above In values", base: np, patch: reqs(`[{key: a, operator: In, values: [p, q], minValues: 3}]`), field: "spec.template.spec.requirements[0].minValues", msg: "number of values"},
		{name: "minValues above 50", base: np, patch: reqs(`[{key: a, operator: Exists, minValues: 51}]`), field: "spec.template.spec.requirements[0].minValues"},
		{name: "minValues 0", base: np, patch: reqs(`[{key: a, operator: Exists, minValues: 0}]`), field: "spec.template.spec.requirements[0].minValues"},
		{name: "Gt with a word", base: np, patch: reqs(`[{key: a, operator: Gt, values: [five]}]`), field: "spec.template.spec.requirements[0]", msg: "integer"},
		{name: "Gt with a negative integer", base: np, patch: reqs(`[{key: a, operator: Gt, values: ["-1"]}]`), field: "spec.template.spec.requirements[0].values", msg: "non-negative integer"},
		{name: "Lt with two values", base: np, patch: reqs(`[{key: a, operator: Lt, values: ["1", "2"]}]`), field: "spec.template.spec.requirements[0].values", msg: "integer"},
		{name: "Gte without values", base: np, patch: reqs(`[{key: a, operator: Gte}]`), field: "spec.template.spec.requirements[0].values"},
		{name: "Lte with a fraction", base: np, patch: reqs(`[{key: a, operator: Lte, values: ["1.5"]}]`), field: "spec.template.spec.requirements[0]", msg: "integer"},
		{name: "malformed requirement key", base: np, patch: reqs(`[{key: "bad key!", operator: Exists}]`), field: "spec.template.spec.requirements[0].key"},
		{name: "hostname in requirements", base: np, patch: reqs(`[{key: kubernetes.io/hostname, operator: In, values: [n1]}]`), field: "spec.template.spec.requirements", msg: "kubernetes.io/hostname"},
		{name: "karpenter.sh/nodepool in requirements", base: np, patch: reqs(`[{key: karpenter.sh/nodepool, operator: In, values: [x]}]`), field: "spec.template.spec.requirements", msg: "karpenter.sh domain"},
		{name: "karpenter.sh key in requirements", base: np, patch: reqs(`[{key: karpenter.sh/custom, operator: Exists}]`), field: "spec.template.spec.requirements", msg: "karpenter.sh domain"},
		{name: "karpenter.sh subdomain in requirements", base: np, patch: reqs(`[{key: team.karpenter.sh/x, operator: Exists}]`), field: "spec.template.spec.requirements", msg: "karpenter.sh domain"},
		{name: "unknown karpenter.k8s.aws key in requirements", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-colour, operator: Exists}]`), field: "spec.template.spec.requirements", msg: "well-known"},
		{name: "more than 100 requirements", base: np, patch: manyRequirements(101), field: "spec.template.spec.requirements", msg: "100"},
		{name: "no requirements", base: np, patch: reqs("null"), field: "spec.template.spec.requirements", msg: "Required"},
		// NodePool template metadata, taints, nodeClassRef.
		{name: "hostname in template labels", base: np, patch: `spec: {template: {metadata: {labels: {kubernetes.io/hostname: n1}}}}`, field: "spec.template.metadata.labels", msg: "kubernetes.io/hostname"},
		{name: "karpenter.sh key in template labels", base: np, patch: `spec: {template: {metadata: {labels: {karpenter.sh/team: b}}}}`, field: "spec.template.metadata.labels", msg: "karpenter.sh domain"},
		{name: "unknown karpenter.k8s.aws key in template labels", base: np, patch: `spec: {template: {metadata: {labels: {karpenter.k8s.aws/colour: red}}}}`, field: "spec.template.metadata.labels", msg: "well-known"},
		{name: "taint effect", base: np, patch: `spec: {template: {spec: {taints: [{key: a, effect: Sometimes}]}}}`, field: "spec.template.spec.taints[0].effect", msg: "Unsupported value"},
		{name: "startup taint effect", base: np, patch: `spec: {template: {spec: {startupTaints: [{key: a, effect: NoWay}]}}}`, field: "spec.template.spec.startupTaints[0].effect", msg: "Unsupported value"},
		{name: "taint key malformed", base: np, patch: `spec: {template: {spec: {taints: [{key: "bad key", effect: NoSchedule}]}}}`, field: "spec.template.spec.taints[0].key", msg: "should match"},
		{name: "taint key empty", base: np, patch: `spec: {template: {spec: {taints: [{key: "", effect: NoSchedule}]}}}`, field: "spec.template.spec.taints[0].key"},
		{name: "startup taint value malformed", base: np, patch: `spec: {template: {spec: {startupTaints: [{key: a, value: "x y", effect: NoSchedule}]}}}`, field: "spec.template.spec.startupTaints[0].value", msg: "should match"},
		{name: "nodeclaim taint key malformed", base: nc, patch: `spec: {taints: [{key: "a b", effect: NoSchedule}]}`, field: "spec.taints[0].key", msg: "should match"},
		{name: "template label value malformed", base: np, patch: `spec: {template: {metadata: {labels: {team: "a b"}}}}`, field: "spec.template.metadata.labels.team", msg: "should match"},
		{name: "template label value too long", base: np, patch: `spec: {template: {metadata: {labels: {team: ` + strings.Repeat("a", 64) + `}}}}`, field: "spec.template.metadata.labels.team"},
		{name: "nodeClassRef group with a slash", base: np, patch: `spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}`, field: "spec.template.spec.nodeClassRef.group", msg: "should match"},
		{name: "empty nodeClassRef kind", base: np, patch: `spec: {template: {spec: {nodeClassRef: {kind: ""}}}}`, field: "spec.template.spec.nodeClassRef.kind", msg: "may not be empty"},
		{name: "volumeSize without unit", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: "20"}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeSize", msg: "should match"},
		{name: "terminationGracePeriod 1 day", base: np, patch: `spec: {template: {spec: {terminationGracePeriod: "1 day"}}}`, field: "spec.template.spec.terminationGracePeriod", msg: "should match"},
		{name: "terminationGracePeriod in days", base: np, patch: `spec: {template: {spec: {terminationGracePeriod: 2d}}}`, field: "spec.template.spec.terminationGracePeriod", msg: "should match"},
		{name: "nodeclaim terminationGracePeriod 1 day", base: nc, patch: `spec: {terminationGracePeriod: "1 day"}`, field: "spec.terminationGracePeriod", msg: "should match"},
		{name: "static pool with a cpu limit", base: np, patch: `spec: {replicas: 3, weight: null}`, field: "spec", msg: "may limit only nodes"},
		{name: "static pool with a weight", base: np, patch: `spec: {replicas: 3, limits: {cpu: null, memory: null}}`, field: "spec", msg: "takes no weight"},
		{name: "negative replicas", base: np, patch: `spec: {replicas: -1, weight: null, limits: null}`, field: "spec.replicas"},
		{name: "placement group by name and id", base: ec2, patch: `spec: {placementGroupSelector: {name: a, id: pg-0abc}}`, field: "spec.placementGroupSelector", msg: "not both"},
		{name: "placement group without name or id", base: ec2, patch: `spec: {placementGroupSelector: {}}`, field: "spec.placementGroupSelector", msg: "name or id"},
		{name: "placement group id malformed", base: ec2, patch: `spec: {placementGroupSelector: {id: group-1}}`, field: "spec.placementGroupSelector.id"},
		{name: "network interfaces without a primary", base: ec2, patch: `spec: {networkInterfaces: [{networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]}`, field: "spec.networkInterfaces", msg: "primary"},
		{name: "network interface type", base: ec2, patch: `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: fast}]}`, field: "spec.networkInterfaces[0].interfaceType"},
		{name: "connection tracking empty", base: ec2, patch: `spec: {connectionTracking: {}}`, field: "spec.connectionTracking", msg: "needs"},
		{name: "connection tracking udp timeout too long", base: ec2, patch: `spec: {connectionTracking: {udpTimeout: 61}}`, field: "spec.connectionTracking.udpTimeout"},
		{name: "negative ipPrefixCount", base: ec2, patch: `spec: {ipPrefixCount: -1}`, field: "spec.ipPrefixCount"},
		{name: "cpu nested virtualization value", base: ec2, patch: `spec: {cpuOptions: {nestedVirtualization: maybe}}`, field: "spec.cpuOptions.nestedVirtualization"},
		{name: "enclave options without enabled", base: ec2, patch: `spec: {enclaveOptions: {}}`, field: "spec.enclaveOptions.enabled"},
		{name: "volume initialization rate without snapshot", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]}`, field: "spec.blockDeviceMappings[0].ebs", msg: "snapshotID"},
		{name: "volume initialization rate above 300", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, snapshotID: snap-1, volumeInitializationRate: 301}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeInitializationRate"},
		{name: "capacity reservation id with instanceMatchCriteria", base: ec2, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0abc, instanceMatchCriteria: open}]}`, field: "spec.capacityReservationSelectorTerms[0]", msg: "mutually exclusive"},
		{name: "no nodeClassRef", base: np, patch: `spec: {template: {spec: {nodeClassRef: null}}}`, field: "spec.template.spec.nodeClassRef", msg: "Required"},
		{name: "empty nodeClassRef name", base: np, patch: `spec: {template: {spec: {nodeClassRef: {name: ""}}}}`, field: "spec.template.spec.nodeClassRef.name"},
		{name: "expireAfter forever", base: np, patch: `spec: {template: {spec: {expireAfter: forever}}}`, field: "spec.template.spec.expireAfter"},
		{name: "expireAfter in days", base: np, patch: `spec: {template: {spec: {expireAfter: 30d}}}`, field: "spec.template.spec.expireAfter"},
		// NodePool weight, disruption.
		{name: "weight 0", base: np, patch: `spec: {weight: 0}`, field: "spec.weight"},
		{name: "weight 101", base: np, patch: `spec: {weight: 101}`, field: "spec.weight"},
		{name: "consolidateAfter in words", base: np, patch: `spec: {disruption: {consolidateAfter: 5 minutes}}`, field: "spec.disruption.consolidateAfter"},
		{name: "unknown consolidationPolicy", base: np, patch: `spec: {disruption: {consolidationPolicy: WhenIdle}}`, field: "spec.disruption.consolidationPolicy", msg: "Unsupported value"},
		{name: "budget nodes abc", base: np, patch: budgets(`[{nodes: abc}]`), field: "spec.disruption.budgets[0].nodes"},
		{name: "budget nodes -1", base: np, patch: budgets(`[{nodes: "-1"}]`), field: "spec.disruption.budgets[0].nodes"},
		{name: "budget nodes 101%", base: np, patch: budgets(`[{nodes: "101%"}]`), field: "spec.disruption.budgets[0].nodes"},
		{name: "schedule without duration", base: np, patch: budgets(`[{nodes: "1", schedule: "@daily"}]`), field: "spec.disruption.budgets[0]", msg: "schedule and duration"},
		{name: "duration without schedule", base: np, patch: budgets(`[{nodes: "1", duration: 1h}]`), field: "spec.disruption.budgets[0]", msg: "schedule and duration"},
		{name: "cron with four fields", base: np, patch: budgets(`[{nodes: "1", schedule: "0 9 * *", duration: 1h}]`), field: "spec.disruption.budgets[0].schedule", msg: "should match"},
		{name: "cron @every", base: np, patch: budgets(`[{nodes: "1", schedule: "@every 1h", duration: 1h}]`), field: "spec.disruption.budgets[0].schedule", msg: "should match"},
		{name: "budget duration in seconds", base: np, patch: budgets(`[{nodes: "1", schedule: "@daily", duration: 30s}]`), field: "spec.disruption.budgets[0].duration"},
		{name: "unknown budget reason", base: np, patch: budgets(`[{nodes: "1", reasons: [Expired]}]`), field: "spec.disruption.budgets[0].reasons[0]", msg: "Unsupported value"},
		{name: "more than 50 budgets", base: np, patch: manyBudgets(51), field: "spec.disruption.budgets", msg: "50"},
		// NodeClaim.
		{name: "nodeclaim unknown operator", base: nc, patch: `spec: {requirements: [{key: a, operator: Near}]}`, field: "spec.requirements[0].operator", msg: "Unsupported value"},
		{name: "nodeclaim hostname requirement", base: nc, patch: `spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]}`, field: "spec.requirements", msg: "kubernetes.io/hostname"},
		{name: "nodeclaim karpenter.sh key", base: nc, patch: `spec: {requirements: [{key: karpenter.sh/registered, operator: Exists}]}`, field: "spec.requirements", msg: "karpenter.sh domain"},
		{name: "nodeclaim expireAfter forever", base: nc, patch: `spec: {expireAfter: forever}`, field: "spec.expireAfter"},
		{name: "nodeclaim taint effect", base: nc, patch: `spec: {taints: [{key: a, effect: Maybe}]}`, field: "spec.taints[0].effect", msg: "Unsupported value"},
		{name: "nodeclaim no nodeClassRef", base: nc, patch: `spec: {nodeClassRef: null}`, field: "spec.nodeClassRef", msg: "Required"},
		// EC2NodeClass.
		{name: "role and instanceProfile", base: ec2, patch: `spec: {instanceProfile: my-profile}`, field: "spec", msg: "exactly one of role and instanceProfile"},
		{name: "neither role nor instanceProfile", base: ec2, patch: `spec: {role: null}`, field: "spec", msg: "exactly one of role and instanceProfile"},
		{name: "alias of unknown family", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: ubuntu@latest}]}`, field: "spec.amiSelectorTerms[0].alias", msg: "family"},
		{name: "alias without version", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: al2023}]}`, field: "spec.amiSelectorTerms[0].alias", msg: "family@version"},
		{name: "windows alias pinned", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: windows2022@v2024}]}`, field: "spec.amiSelectorTerms[0].alias", msg: "latest"},
		{name: "alias family differs from amiFamily", base: ec2, patch: `spec: {amiFamily: AL2, amiSelectorTerms: [{alias: al2023@latest}]}`, field: "spec", msg: "amiFamily must match"},
		{name: "alias with another term", base: ec2, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-123}]}`, field: "spec.amiSelectorTerms", msg: "only"},
		{name: "alias with tags in one term", base: ec2, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest, tags: {a: b}}]}`, field: "spec.amiSelectorTerms[0]", msg: "alias is mutually exclusive"},
		{name: "ami id with name", base: ec2, patch: `spec: {amiSelectorTerms: [{id: ami-123, name: foo}]}`, field: "spec.amiSelectorTerms[0]", msg: "id is mutually exclusive"},
		{name: "empty AMI term", base: ec2, patch: `spec: {amiSelectorTerms: [{}]}`, field: "spec.amiSelectorTerms[0]"},
		{name: "amiFamily missing without alias", base: ec2, patch: `spec: {amiFamily: null}`, field: "spec", msg: "amiFamily is required"},
		{name: "unknown amiFamily", base: ec2, patch: `spec: {amiFamily: Ubuntu}`, field: "spec.amiFamily", msg: "Unsupported value"},
		{name: "no subnetSelectorTerms", base: ec2, patch: `spec: {subnetSelectorTerms: null}`, field: "spec.subnetSelectorTerms", msg: "Required"},
		{name: "empty subnetSelectorTerms", base: ec2, patch: `spec: {subnetSelectorTerms: []}`, field: "spec.subnetSelectorTerms"},
		{name: "empty subnet term", base: ec2, patch: `spec: {subnetSelectorTerms: [{}]}`, field: "spec.subnetSelectorTerms[0]", msg: "tags or id"},
		{name: "subnet term id with tags", base: ec2, patch: `spec: {subnetSelectorTerms: [{id: subnet-123, tags: {a: b}}]}`, field: "spec.subnetSelectorTerms[0]", msg: "mutually exclusive"},
		{name: "malformed subnet id", base: ec2, patch: `spec: {subnetSelectorTerms: [{id: sg-123}]}`, field: "spec.subnetSelectorTerms[0].id"},
		{name: "empty tag value in term", base: ec2, patch: `spec: {subnetSelectorTerms: [{tags: {a: ""}}]}`, field: "spec.subnetSelectorTerms[0].tags", msg: "empty"},
		{name: "no securityGroupSelectorTerms", base: ec2, patch: `spec: {securityGroupSelectorTerms: null}`, field: "spec.securityGroupSelectorTerms", msg: "Required"},
		{name: "empty security group term", base: ec2, patch: `spec: {securityGroupSelectorTerms: [{}]}`, field: "spec.securityGroupSelectorTerms[0]"},
		{name: "security group id with name", base: ec2, patch: `spec: {securityGroupSelectorTerms: [{id: sg-123, name: web}]}`, field: "spec.securityGroupSelectorTerms[0]", msg: "mutually exclusive"},
		{name: "no amiSelectorTerms", base: ec2, patch: `spec: {amiSelectorTerms: null}`, field: "spec.amiSelectorTerms", msg: "Required"},
		{name: "capacity reservation id with ownerID", base: ec2, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-123, ownerID: "123456789012"}]}`, field: "spec.capacityReservationSelectorTerms[0]", msg: "mutually exclusive"},
		{name: "httpTokens sometimes", base: ec2, patch: `spec: {metadataOptions: {httpTokens: sometimes}}`, field: "spec.metadataOptions.httpTokens", msg: "Unsupported value"},
		{name: "httpEndpoint on", base: ec2, patch: `spec: {metadataOptions: {httpEndpoint: "on"}}`, field: "spec.metadataOptions.httpEndpoint", msg: "Unsupported value"},
		{name: "httpProtocolIPv6 yes", base: ec2, patch: `spec: {metadataOptions: {httpProtocolIPv6: "yes"}}`, field: "spec.metadataOptions.httpProtocolIPv6", msg: "Unsupported value"},
		{name: "hop limit 65", base: ec2, patch: `spec: {metadataOptions: {httpPutResponseHopLimit: 65}}`, field: "spec.metadataOptions.httpPutResponseHopLimit"},
		{name: "two root volumes", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]}`, field: "spec.blockDeviceMappings", msg: "rootVolume"},
		{name: "volumeSize not a quantity", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: big}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeSize"},
		{name: "volumeSize zero", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 0Gi}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeSize", msg: "should match"},
		{name: "volumeSize above 64Ti", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 65Ti}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeSize", msg: "should match"},
		{name: "unknown volumeType", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp9}}]}`, field: "spec.blockDeviceMappings[0].ebs.volumeType", msg: "Unsupported value"},
		{name: "instanceStorePolicy RAID1", base: ec2, patch: `spec: {instanceStorePolicy: RAID1}`, field: "spec.instanceStorePolicy", msg: "Unsupported value"},
		{name: "restricted tag", base: ec2, patch: `spec: {tags: {eks:eks-cluster-name: other}}`, field: "spec.tags", msg: "eks:eks-cluster-name"},
	}, append(overlayBufferInvalidCases(), peerRuleCases()...)...)
}

// runtimeCases are objects both CRDs (ours and the peer's) admit and that
// RuntimeValidate refuses afterwards, as the peer refuses them at run time
// (ValidationSucceeded=False): the error must name field, with msg in its
// message.
func runtimeCases() []invalidCase {
	np, nc, ec2 := baseNodePool, baseNodeClaim, baseEC2NodeClass
	return []invalidCase{
		{name: "malformed requirement value", base: np, patch: reqs(`[{key: a, operator: In, values: ["has space"]}]`), field: "spec.template.spec.requirements[0].values[0]", msg: "label value"},
		{name: "requirement value too long", base: np, patch: reqs(`[{key: a, operator: In, values: [` + strings.Repeat("a", 64) + `]}]`), field: "spec.template.spec.requirements[0].values[0]", msg: "63"},
		{name: "cron hour 25", base: np, patch: budgets(`[{nodes: "1", schedule: "0 25 * * *", duration: 1h}]`), field: "spec.disruption.budgets[0].schedule", msg: "cron"},
		{name: "cron unknown day name", base: np, patch: budgets(`[{nodes: "1", schedule: "0 9 * * funday", duration: 1h}]`), field: "spec.disruption.budgets[0].schedule", msg: "cron"},
		{name: "imageGC thresholds reversed", base: ec2, patch: `spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}}`, field: "spec.kubelet.imageGCHighThresholdPercent", msg: "greater than imageGCLowThresholdPercent"},
		{name: "imageGC above 100", base: ec2, patch: `spec: {kubelet: {imageGCHighThresholdPercent: 101}}`, field: "spec.kubelet.imageGCHighThresholdPercent", msg: "between 0 and 100"},
		{name: "unknown evictionHard signal", base: ec2, patch: `spec: {kubelet: {evictionHard: {memory.free: 1Gi}}}`, field: "spec.kubelet.evictionHard[memory.free]", msg: "memory.available"},
		{name: "evictionSoft without grace period", base: ec2, patch: `spec: {kubelet: {evictionSoft: {memory.available: 5%}}}`, field: "spec.kubelet.evictionSoftGracePeriod[memory.available]", msg: "grace period"},
		{name: "unknown kubeReserved resource", base: ec2, patch: `spec: {kubelet: {kubeReserved: {gpu: "1"}}}`, field: "spec.kubelet.kubeReserved[gpu]", msg: "cpu"},
		{name: "requirement key name part too long", base: np, patch: reqs(`[{key: example.com/` + strings.Repeat("k", 64) + `, operator: Exists}]`), field: "spec.template.spec.requirements[0].key", msg: "63"},
		{name: "nodeclaim requirement value malformed", base: nc, patch: `spec: {requirements: [{key: a, operator: In, values: ["x y"]}]}`, field: "spec.requirements[0].values[0]", msg: "label value"},
		{name: "template label key malformed", base: np, patch: `spec: {template: {metadata: {labels: {"a b": x}}}}`, field: "spec.template.metadata.labels[a b]", msg: "label key"},
		{name: "kubelet maxPods of the wrong type", base: ec2, patch: `spec: {kubelet: {maxPods: many, evictionHard: [x]}}`, field: "spec.kubelet.maxPods", msg: "must be an integer"},
		{name: "kubelet evictionHard not a map", base: ec2, patch: `spec: {kubelet: {evictionHard: [x]}}`, field: "spec.kubelet.evictionHard", msg: "must be a map of strings"},
		{name: "negative maxPods", base: ec2, patch: `spec: {kubelet: {maxPods: -1}}`, field: "spec.kubelet.maxPods", msg: "negative"},
		{name: "clusterDNS not an address", base: ec2, patch: `spec: {kubelet: {clusterDNS: [dns.local]}}`, field: "spec.kubelet.clusterDNS[0]", msg: "IP address"},
		{name: "grace period without evictionSoft", base: ec2, patch: `spec: {kubelet: {evictionSoftGracePeriod: {memory.available: 1m}}}`, field: "spec.kubelet.evictionSoftGracePeriod[memory.available]", msg: "no evictionSoft"},
		{name: "class without spec", base: ec2, patch: `spec: null`, field: "spec.subnetSelectorTerms", msg: "Required"},
	}
}

// TestRuntimeRefusedAfterAdmission checks that each runtime case is
// admitted and that RuntimeValidate on the object as stored refuses it
// naming the field.
func TestRuntimeRefusedAfterAdmission(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	for _, tc := range runtimeCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.base, "runtime", tc.patch)
			if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Fatalf("refused at admission (the peer admits it): %v", err)
			}
			var errs field.ErrorList
			switch obj.GetKind() {
			case "NodePool":
				np := &karpv1.NodePool{}
				fromUnstructured(t, obj, np)
				errs = np.RuntimeValidate()
			case "NodeClaim":
				nc := &karpv1.NodeClaim{}
				fromUnstructured(t, obj, nc)
				errs = nc.RuntimeValidate()
			default:
				ec := &awsv1.EC2NodeClass{}
				fromUnstructured(t, obj, ec)
				errs = ec.RuntimeValidate()
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Error(), tc.msg) {
					return
				}
			}
			t.Errorf("RuntimeValidate: no error on %s with %q in %v", tc.field, tc.msg, errs)
		})
	}
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidObjectsRefused(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	cases := invalidCases()
	if len(cases) < 30 {
		t.Fatalf("only %d invalid cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.base, "invalid", tc.patch)
			err := c.Create(ctx, obj, client.DryRunAll)
			requireInvalid(t, err, tc.field, tc.msg)
		})
	}
}

// The bases themselves must be valid, or every invalid case would pass for
// the wrong reason.
func TestBasesAccepted(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	for _, base := range []string{baseNodePool, baseNodeClaim, baseEC2NodeClass, baseNodeOverlay, baseCapacityBuffer} {
		obj := object(t, base, "base", "")
		if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("%s refused: %v", obj.GetKind(), err)
		}
	}
}

// validCase is an object the CRDs must accept.
type validCase struct{ name, base, patch string }

func validCases() []validCase {
	np, nc, ec2 := baseNodePool, baseNodeClaim, baseEC2NodeClass
	return append([]validCase{
		{name: "Exists with minValues 5", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 5}]`)},
		{name: "In with minValues equal to values", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 3}]`)},
		{name: "minValues 50", base: np, patch: reqs(`[{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 50}]`)},
		{name: "Gte and Lte with one integer", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}, {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["64"]}]`)},
		{name: "Gt and Lt", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}, {key: karpenter.k8s.aws/instance-memory, operator: Lt, values: ["65536"]}]`)},
		{name: "NotIn and DoesNotExist", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-size, operator: NotIn, values: [nano, micro]}, {key: karpenter.k8s.aws/instance-gpu-count, operator: DoesNotExist}]`)},
		{name: "capacity-type requirement", base: np, patch: reqs(`[{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]}]`)},
		{name: "well-known karpenter.k8s.aws keys", base: np, patch: reqs(`[{key: karpenter.k8s.aws/instance-cpu-manufacturer, operator: In, values: [aws]}, {key: karpenter.k8s.aws/instance-hypervisor, operator: In, values: [nitro]}, {key: karpenter.k8s.aws/instance-local-nvme, operator: Exists}, {key: topology.k8s.aws/zone-id, operator: In, values: [use1-az1]}]`)},
		{name: "well-known karpenter.k8s.aws template label", base: np, patch: `spec: {template: {metadata: {labels: {karpenter.k8s.aws/instance-family: m5}}}}`},
		{name: "Exists with values (ignored, as by the peer)", base: np, patch: reqs(`[{key: a, operator: Exists, values: [x]}]`)},
		{name: "selector terms with empty tags (select everything, as in the peer)", base: ec2, patch: `spec: {subnetSelectorTerms: [{tags: {}}], securityGroupSelectorTerms: [{tags: {}}]}`},
		{name: "volumeSize in T and G", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 64T}}, {deviceName: /dev/xvdb, ebs: {volumeSize: 100G}}]}`},
		{name: "exactly 100 requirements", base: np, patch: manyRequirements(100)},
		{name: "no requirements list entries", base: np, patch: reqs(`[]`)},
		{name: "expireAfter Never", base: np, patch: `spec: {template: {spec: {expireAfter: Never}}}`},
		{name: "consolidateAfter Never", base: np, patch: `spec: {disruption: {consolidateAfter: Never}}`},
		{name: "compound durations", base: np, patch: `spec: {template: {spec: {expireAfter: 1h30m10s, terminationGracePeriod: 48h}}, disruption: {consolidateAfter: 30s}}`},
		{name: "budget @daily", base: np, patch: budgets(`[{nodes: "0", schedule: "@daily", duration: 10m}]`)},
		{name: "budget weekdays", base: np, patch: budgets(`[{nodes: "10%"}, {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h}]`)},
		{name: "budget cron lists ranges and steps", base: np, patch: budgets(`[{nodes: "5", schedule: "*/15 0-6,22 1,15 JAN-mar sun", duration: 1h30m, reasons: [Drifted, Empty, Underutilized]}]`)},
		{name: "budget nodes 100%", base: np, patch: budgets(`[{nodes: "100%"}]`)},
		{name: "50 budgets", base: np, patch: manyBudgets(50)},
		{name: "weight 1", base: np, patch: `spec: {weight: 1}`},
		{name: "weight 100", base: np, patch: `spec: {weight: 100}`},
		{name: "WhenEmpty", base: np, patch: `spec: {disruption: {consolidationPolicy: WhenEmpty}}`},
		{name: "Balanced", base: np, patch: `spec: {disruption: {consolidationPolicy: Balanced}}`},
		{name: "budget for Unhealthy", base: np, patch: budgets(`[{nodes: "1", reasons: [Unhealthy, Drifted, Empty, Underutilized]}]`)},
		{name: "static pool (accepted, marked not supported at run time)", base: np, patch: `spec: {replicas: 3, weight: null, limits: {cpu: null, memory: null, nodes: "5"}}`},
		{name: "capacity-type as a template label (the peer allows it)", base: np, patch: `spec: {template: {metadata: {labels: {karpenter.sh/capacity-type: spot}}}}`},
		{name: "limits on any resource", base: np, patch: `spec: {limits: {nodes: "10", nvidia.com/gpu: "8"}}`},
		{name: "nodeclaim with nodepool requirement and expireAfter", base: nc, patch: `spec: {expireAfter: Never, taints: [{key: team, value: b, effect: NoExecute}]}`},
		{name: "ec2nodeclass requirement and template label (the peer allows both)", base: np, patch: `spec: {template: {metadata: {labels: {karpenter.k8s.aws/ec2nodeclass: default}}, spec: {requirements: [{key: karpenter.k8s.aws/ec2nodeclass, operator: In, values: [default]}]}}}`},
		{name: "nodeclaim with the peer's ec2nodeclass requirement", base: nc, patch: `spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}, {key: karpenter.k8s.aws/ec2nodeclass, operator: In, values: [default]}]}`},
		{name: "alias al2023@latest without amiFamily", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: al2023@latest}]}`},
		{name: "pinned alias with matching amiFamily", base: ec2, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: al2023@v20240807}]}`},
		{name: "bottlerocket alias", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]}`},
		{name: "windows alias latest", base: ec2, patch: `spec: {amiFamily: null, amiSelectorTerms: [{alias: windows2025@latest}]}`},
		{name: "instanceProfile instead of role", base: ec2, patch: `spec: {role: null, instanceProfile: my-profile}`},
		{name: "Custom family with several AMI terms", base: ec2, patch: `spec: {amiFamily: Custom, amiSelectorTerms: [{id: ami-0123abcd}, {name: my-ami-*, owner: self}, {ssmParameter: /my/ami}]}`},
		{name: "the peer's newer fields (accepted, marked not supported at run time)", base: ec2, patch: `
spec:
  networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]
  placementGroupSelector: {id: pg-0abc}
  cpuOptions: {nestedVirtualization: enabled}
  enclaveOptions: {enabled: true}
  connectionTracking: {tcpEstablishedTimeout: 3600, udpStreamTimeout: 120, udpTimeout: 30}
  ipPrefixCount: 2
  capacityReservationSelectorTerms: [{instanceMatchCriteria: open}]
  blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, snapshotID: snap-0abc, volumeInitializationRate: 150}}]
  kubelet: {maxPods: 20, cpuManagerPolicy: static, topologyManager: {policy: best-effort}}
`},
		{name: "security group by name", base: ec2, patch: `spec: {securityGroupSelectorTerms: [{name: web}, {id: sg-0abc}]}`},
		{name: "everything else", base: ec2, patch: `
spec:
  userData: "#!/bin/bash"
  tags: {team: platform}
  associatePublicIPAddress: false
  detailedMonitoring: true
  instanceStorePolicy: RAID0
  capacityReservationSelectorTerms: [{id: cr-0abc}, {tags: {a: b}, ownerID: "123456789012"}]
  metadataOptions: {httpEndpoint: disabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 64, httpTokens: optional}
  blockDeviceMappings:
  - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 3000, throughput: 125, encrypted: true, deleteOnTermination: true, kmsKeyID: "arn:aws:kms:us-east-1:123456789012:key/abc", snapshotID: snap-0abc}}
  - {deviceName: /dev/xvdb, ebs: {volumeSize: 1Ti, volumeType: io2, iops: 10000}}
  kubelet:
    clusterDNS: [10.0.0.10, "fd00::a"]
    maxPods: 110
    podsPerCore: 10
    systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "100"}
    kubeReserved: {cpu: 200m}
    evictionHard: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: 5%, imagefs.available: 15%, imagefs.inodesFree: 5%, pid.available: 10%}
    evictionSoft: {memory.available: 10%}
    evictionSoftGracePeriod: {memory.available: 1m}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
`},
	}, overlayBufferValidCases()...)
}

func TestValidEdgeCasesAccepted(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	for _, tc := range validCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.base, "valid", tc.patch)
			if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestUpdatesRefused(t *testing.T) {
	cases := []struct {
		name, base, patch, field, msg string
	}{
		{name: "nodeClassRef group changed", base: baseNodePool, patch: `spec: {template: {spec: {nodeClassRef: {group: example.com}}}}`, field: "spec.template.spec.nodeClassRef", msg: "group is immutable"},
		{name: "nodeClassRef kind changed", base: baseNodePool, patch: `spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}`, field: "spec.template.spec.nodeClassRef", msg: "kind is immutable"},
		{name: "nodeclaim requirements changed", base: baseNodeClaim, patch: `spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [other]}]}`, field: "spec", msg: "immutable"},
		{name: "nodeclaim expireAfter changed", base: baseNodeClaim, patch: `spec: {expireAfter: Never}`, field: "spec", msg: "immutable"},
		{name: "nodeclaim resources changed", base: baseNodeClaim, patch: `spec: {resources: {requests: {cpu: "2"}}}`, field: "spec", msg: "immutable"},
		{name: "nodeclaim taints added", base: baseNodeClaim, patch: `spec: {taints: [{key: a, effect: NoSchedule}]}`, field: "spec", msg: "immutable"},
		{name: "nodeclaim nodeClassRef renamed", base: baseNodeClaim, patch: `spec: {nodeClassRef: {name: other}}`, field: "spec", msg: "immutable"},
		{name: "nodeclaim terminationGracePeriod added", base: baseNodeClaim, patch: `spec: {terminationGracePeriod: 1h}`, field: "spec.terminationGracePeriod", msg: "immutable"},
		{name: "role to instanceProfile", base: baseEC2NodeClass, patch: `spec: {role: null, instanceProfile: my-profile}`, field: "spec", msg: "changing from role"},
	}
	c := newClient(t)
	ctx := testContext(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("update-%d", i)
			obj := object(t, tc.base, name, "")
			if err := c.Create(ctx, obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = c.Delete(ctx, obj) })
			mergePatch(t, obj.Object, tc.patch)
			requireInvalid(t, c.Update(ctx, obj), tc.field, tc.msg)
		})
	}
}

// Changing what may change must still work: the NodePool's nodeClassRef name,
// a NodeClaim's metadata and status.
func TestUpdatesAccepted(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)

	np := object(t, baseNodePool, "update-ok", "")
	if err := c.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, np) })
	mergePatch(t, np.Object, `spec: {template: {spec: {nodeClassRef: {name: other}}}, weight: 50}`)
	if err := c.Update(ctx, np); err != nil {
		t.Errorf("renaming the node class: %v", err)
	}

	nc := object(t, baseNodeClaim, "update-ok", "")
	if err := c.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, nc) })
	mergePatch(t, nc.Object, `metadata: {labels: {a: b}, finalizers: [karpenter.sh/termination]}`)
	if err := c.Update(ctx, nc); err != nil {
		t.Errorf("labelling the NodeClaim: %v", err)
	}
	nc.SetFinalizers(nil)
	if err := c.Update(ctx, nc); err != nil {
		t.Errorf("removing the finalizer: %v", err)
	}
}

// Conditions written by the peer may leave reason and message out; the
// NodeClaim status accepts them, as the peer's CRD does, and still checks
// what it checks.
func TestNodeClaimConditionsWithoutReason(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	obj := object(t, baseNodeClaim, "peer-conditions", "")
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	set := func(conds string) error {
		patch := object(t, baseNodeClaim, "peer-conditions", "status: {conditions: "+conds+"}")
		obj.Object["status"] = patch.Object["status"]
		return c.Status().Update(ctx, obj, client.DryRunAll)
	}
	if err := set(`[{type: Launched, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}, {type: Drifted, status: "False", reason: "", lastTransitionTime: "2026-01-01T00:00:00Z"}]`); err != nil {
		t.Fatalf("conditions without reason and message refused: %v", err)
	}
	err := set(`[{type: Launched, status: Maybe, lastTransitionTime: "2026-01-01T00:00:00Z"}]`)
	requireInvalid(t, err, "status.conditions[0].status", "Unsupported value")
	err = set(`[{type: Launched, status: "True", reason: "not camel", lastTransitionTime: "2026-01-01T00:00:00Z"}]`)
	requireInvalid(t, err, "status.conditions[0].reason", "should match")
}

// spec.replicas is behind the scale subresource, as in the peer's CRD, and
// cannot be added to a dynamic pool.
func TestNodePoolScaleSubresource(t *testing.T) {
	c := newClient(t)
	ctx := testContext(t)
	obj := object(t, baseNodePool, "static", `spec: {replicas: 2, weight: null, limits: {cpu: null, memory: null}}`)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	scale := &unstructured.Unstructured{}
	scale.SetAPIVersion("autoscaling/v1")
	scale.SetKind("Scale")
	if err := c.SubResource("scale").Get(ctx, obj, scale); err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); n != 2 {
		t.Errorf("scale spec.replicas %d, want 2 (%v)", n, scale.Object)
	}
	dyn := object(t, baseNodePool, "dynamic", "")
	if err := c.Create(ctx, dyn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), dyn) })
	patch := object(t, baseNodePool, "dynamic", `spec: {replicas: 2, weight: null, limits: {cpu: null, memory: null}}`)
	dyn.Object["spec"] = patch.Object["spec"]
	requireInvalid(t, c.Update(ctx, dyn, client.DryRunAll), "spec", "static or dynamic")
}
