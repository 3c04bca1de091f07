package crds_test

// knownGaps are the differences from the peer's CRDs that remain (see
// TestSchemasAcceptWhatThePeersAccept), each with why; docs/api.md lists
// them too.
var knownGaps = []struct{ diff, why string }{
	{"karpenter.sh_nodepools.spec.template.spec.requirements[].values pattern ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$, ours <nil>", "the peer's pattern sits on the array, where the apiserver ignores it; both check values as label values at run time (RuntimeValidate)"},
	{"karpenter.sh_nodepools.spec.template.spec.requirements[].values maxLength 63, ours <nil>", "the peer's maxLength sits on the array, where the apiserver ignores it; both check value lengths at run time (RuntimeValidate)"},
	{"karpenter.sh_nodeclaims.spec.requirements[].values pattern ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$, ours <nil>", "the peer's pattern sits on the array, where the apiserver ignores it; both check values as label values at run time (RuntimeValidate)"},
	{"karpenter.sh_nodeclaims.spec.requirements[].values maxLength 63, ours <nil>", "the peer's maxLength sits on the array, where the apiserver ignores it; both check value lengths at run time (RuntimeValidate)"},
}
