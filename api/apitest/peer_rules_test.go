package apitest

import (
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/api/internal/peercrds"
)

// peerRule is one x-kubernetes-validations rule of the peer's CRDs.
type peerRule struct{ file, path, rule, message string }

// peerRules lists the peer's CEL rules, except transition rules (those
// reading oldSelf: a create never runs them; TestUpdatesRefused covers
// ours).
func peerRules(t *testing.T) []peerRule {
	t.Helper()
	files, err := peercrds.Fetch(t.TempDir())
	if err != nil {
		t.Fatalf("fetching the peer's CRDs: %v", err)
	}
	var out []peerRule
	var walk func(file, path string, n map[string]any)
	walk = func(file, path string, n map[string]any) {
		if l, ok := n["x-kubernetes-validations"].([]any); ok {
			for _, r := range l {
				m := r.(map[string]any)
				rule, _ := m["rule"].(string)
				msg, _ := m["message"].(string)
				if strings.Contains(rule, "oldSelf") {
					continue
				}
				out = append(out, peerRule{file, path, rule, msg})
			}
		}
		if p, ok := n["properties"].(map[string]any); ok {
			for k, v := range p {
				walk(file, path+"."+k, v.(map[string]any))
			}
		}
		if v, ok := n["items"].(map[string]any); ok {
			walk(file, path+"[]", v)
		}
		if v, ok := n["additionalProperties"].(map[string]any); ok {
			walk(file, path+"{}", v)
		}
	}
	for _, name := range peercrds.Files {
		var crd map[string]any
		if err := yaml.Unmarshal(files[name], &crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
			schema := v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
			walk(name, "", schema)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].file+out[i].path+out[i].rule < out[j].file+out[j].path+out[j].rule
	})
	return out
}

// TestCasesCoverThePeersRules checks that each CEL rule of the peer's CRDs
// refuses at least one invalid case of this package (its message appears
// in the peer's answer). With TestAgreesWithThePeer, that makes a rule
// missing from ours fail: the case the peer's rule refuses would be
// admitted by ours. uncoveredPeerRules lists the rules no case reaches
// yet, with why; a listed rule that a case now reaches fails too.
func TestCasesCoverThePeersRules(t *testing.T) {
	ext := apiextensionsClient(t)
	installPeerCRDs(t, ext)
	c := newClient(t)
	ctx := testContext(t)
	var answers []string
	for _, tc := range invalidCases() {
		obj := object(t, tc.base, "rules", tc.patch)
		if err := c.Create(ctx, asPeer(obj), client.DryRunAll); err != nil {
			answers = append(answers, err.Error())
		}
	}
	rules := peerRules(t)
	if len(rules) < 50 {
		t.Fatalf("only %d peer rules found: the walk is wrong", len(rules))
	}
	covered := 0
	for _, r := range rules {
		needle := r.message
		if needle == "" {
			needle = r.rule
		}
		hit := false
		for _, a := range answers {
			hit = hit || strings.Contains(a, needle)
		}
		key := strings.TrimSuffix(r.file, ".yaml") + r.path + ": " + needle
		_, listed := uncoveredPeerRules[key]
		switch {
		case hit && listed:
			t.Errorf("listed in uncoveredPeerRules but a case reaches it now (remove it): %s", key)
		case !hit && !listed:
			t.Errorf("no invalid case is refused by the peer's rule %s (rule %s)", key, r.rule)
		case hit:
			covered++
		}
	}
	t.Logf("%d peer rules, %d reached by a case, %d listed as not reached", len(rules), covered, len(uncoveredPeerRules))
}

// uncoveredPeerRules are the peer's CEL rules no invalid case reaches yet,
// keyed "file.path: message".
var uncoveredPeerRules = map[string]string{}

// peerRuleCases reach the peer's rules the other cases do not (found by
// TestCasesCoverThePeersRules); they join invalidCases.
func peerRuleCases() []invalidCase {
	np, nc, ec2 := baseNodePool, baseNodeClaim, baseEC2NodeClass
	alias := func(family, alias string) string {
		return `spec: {amiFamily: ` + family + `, amiSelectorTerms: [{alias: "` + alias + `"}]}`
	}
	return []invalidCase{
		{name: "al2 alias with amiFamily AL2023", base: ec2, patch: alias("AL2023", "al2@latest"), field: "spec"},
		{name: "bottlerocket alias with amiFamily AL2023", base: ec2, patch: alias("AL2023", "bottlerocket@latest"), field: "spec"},
		{name: "windows2019 alias with amiFamily AL2023", base: ec2, patch: alias("AL2023", "windows2019@latest"), field: "spec"},
		{name: "windows2022 alias with amiFamily AL2023", base: ec2, patch: alias("AL2023", "windows2022@latest"), field: "spec"},
		{name: "windows2025 alias with amiFamily AL2023", base: ec2, patch: alias("AL2023", "windows2025@latest"), field: "spec"},
		{name: "ebs without snapshotID or volumeSize", base: ec2, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}`, field: "spec.blockDeviceMappings[0].ebs", msg: "volumeSize or a snapshotID"},
		{name: "empty capacity reservation term", base: ec2, patch: `spec: {capacityReservationSelectorTerms: [{ownerID: "123456789012"}]}`, field: "spec.capacityReservationSelectorTerms"},
		{name: "empty instanceProfile", base: ec2, patch: `spec: {role: null, instanceProfile: ""}`, field: "spec", msg: "role and instanceProfile"},
		{name: "duplicate network interface", base: ec2, patch: `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]}`, field: "spec.networkInterfaces"},
		{name: "empty role", base: ec2, patch: `spec: {role: ""}`, field: "spec", msg: "role and instanceProfile"},
		{name: "empty securityGroupSelectorTerms", base: ec2, patch: `spec: {securityGroupSelectorTerms: []}`, field: "spec.securityGroupSelectorTerms"},
		{name: "cluster tag", base: ec2, patch: `spec: {tags: {kubernetes.io/cluster/other: owned}}`, field: "spec.tags"},
		{name: "empty tag key", base: ec2, patch: `spec: {tags: {"": x}}`, field: "spec.tags"},
		{name: "nodepool tag", base: ec2, patch: `spec: {tags: {karpenter.sh/nodepool: x}}`, field: "spec.tags"},
		{name: "ec2nodeclass tag", base: ec2, patch: `spec: {tags: {karpenter.k8s.aws/ec2nodeclass: x}}`, field: "spec.tags"},
		{name: "nodeclaim tag", base: ec2, patch: `spec: {tags: {karpenter.sh/nodeclaim: x}}`, field: "spec.tags"},
		{name: "nodeclaim empty nodeClassRef group", base: nc, patch: `spec: {nodeClassRef: {group: ""}}`, field: "spec.nodeClassRef.group"},
		{name: "empty nodeClassRef group", base: np, patch: `spec: {template: {spec: {nodeClassRef: {group: ""}}}}`, field: "spec.template.spec.nodeClassRef.group"},
	}
}
