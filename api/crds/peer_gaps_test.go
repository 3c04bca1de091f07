package crds_test

// knownGaps are the differences from the peer's CRDs that remain (see
// TestSchemasAcceptWhatThePeersAccept), each with why; docs/api.md lists
// them too.
var knownGaps = []struct{ diff, why string }{}
