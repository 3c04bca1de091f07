// Package kubenode is the emulator's node booter: it plays the kubelet of
// every instance the local AWS emulator (package awsemu) runs, so that
// launching an instance through EC2 makes a Node appear in a real
// Kubernetes control plane, as on EKS.
//
// For each instance that reaches running, the booter registers a Node the
// way the kubelet would with that instance's launch-template user data
// (parsed by package userdata):
//
//   - name: the private DNS name (ip-10-0-1-23.ec2.internal);
//     spec.providerID aws:///ZONE/INSTANCE-ID;
//   - labels: kubernetes.io/arch, kubernetes.io/os, kubernetes.io/hostname,
//     node.kubernetes.io/instance-type, topology.kubernetes.io/zone and
//     topology.kubernetes.io/region, plus exactly the user data's node
//     labels;
//   - taints: exactly the user data's registered taints (Karpenter-style
//     user data includes karpenter.sh/unregistered:NoExecute);
//   - capacity and allocatable: the catalog's (pkg/catalog) for the type
//     under the user data's max pods, kube/system reserved and eviction
//     thresholds and the root volume's size.
//
// kwok (which the control plane runs with --manage-all-nodes) then keeps
// the Node Ready, keeps its capacity and runs its pods. A stand-in node
// agent removes the taints of Options.StartupTaintKeys (none by default)
// DefaultStartupTaintDelay x TimeScale after registration, as the DaemonSet
// owning each key does in a real cluster; a NodeClaim's other startup
// taints stay (karpenter never removes startup taints). When the
// instance shuts down or terminates, its Node is deleted.
//
// Invariants: a Node is only created for a running instance and only once;
// a stale Node with the same name but another provider id is replaced;
// user data that does not parse registers no Node (Err reports why, naming
// the format and line), as a real node with broken user data never joins.
// The booter is level-triggered: it reconciles every instance at start and
// again on each state change, retrying API failures with backoff.
package kubenode
