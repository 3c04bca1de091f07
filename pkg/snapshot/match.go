package snapshot

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// NodeClaimsByNode maps each node's name to its NodeClaim, the one rule
// every reader of nodes and claims uses (Build, `cost`, `top`): the one
// claim whose status.providerID is the node's spec.providerID; for a node
// without a claim of its providerID, the one claim whose status.nodeName
// names it and whose providerID does not contradict the node's. A claim
// naming a node whose providerID is another's (an impossible status), a
// providerID or nodeName two claims share, match nothing: such a node is
// priced from its labels, never at another claim's price.
func NodeClaimsByNode(nodes []*corev1.Node, claims []*karpv1.NodeClaim) map[string]*karpv1.NodeClaim {
	byProvider := make(map[string]*karpv1.NodeClaim, len(claims))
	byName := make(map[string]*karpv1.NodeClaim, len(claims))
	shared := map[string]bool{}
	add := func(m map[string]*karpv1.NodeClaim, k string, nc *karpv1.NodeClaim) {
		if k == "" {
			return
		}
		if _, dup := m[k]; dup {
			shared[k] = true
		}
		m[k] = nc
	}
	for _, nc := range claims {
		add(byProvider, "p/"+nc.Status.ProviderID, nc)
		add(byName, "n/"+nc.Status.NodeName, nc)
	}
	out := make(map[string]*karpv1.NodeClaim, len(nodes))
	taken := make(map[*karpv1.NodeClaim]bool, len(nodes))
	for _, n := range nodes {
		pid := n.Spec.ProviderID
		if nc, ok := byProvider["p/"+pid]; ok && pid != "" && !shared["p/"+pid] {
			out[n.Name], taken[nc] = nc, true
		}
	}
	for _, n := range nodes {
		if _, done := out[n.Name]; done {
			continue
		}
		nc, ok := byName["n/"+n.Name]
		if !ok || shared["n/"+n.Name] || taken[nc] {
			continue
		}
		if p := nc.Status.ProviderID; p != "" && n.Spec.ProviderID != "" && p != n.Spec.ProviderID {
			continue
		}
		out[n.Name], taken[nc] = nc, true
	}
	return out
}
