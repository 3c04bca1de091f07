// Package userdata renders the EC2 user data that makes a launched instance
// join the cluster as the node a NodeClaim asked for, for each AMI family,
// merged with the user data the EC2NodeClass supplies; and parses it back
// (Parse), which tests and the local emulator use to see what the kubelet
// will be told.
//
// See ExampleRender for an AL2023 node.
//
// # Families
//
//   - AL2023: a MIME multipart document. The user's parts come first, kept
//     byte for byte; dovetail's nodeadm NodeConfig (content type
//     application/node.eks.aws) comes last. nodeadm merges NodeConfigs in
//     order, so the user may add settings, while the fields dovetail owns
//     (cluster name, endpoint, CA, service CIDR, node labels and taints)
//     end up as dovetail wrote them. A user value that is not MIME is
//     wrapped as one part: a NodeConfig YAML document, a shell script
//     ("#!") or cloud-config ("#cloud-config").
//   - Bottlerocket: one TOML document. The user's TOML is the base; dovetail
//     sets the [settings.kubernetes] keys it owns (cluster-name, api-server,
//     cluster-certificate, cluster-dns-ip, max-pods, node-labels,
//     node-taints, kube-reserved, system-reserved, eviction-hard,
//     image-gc-*, cpu-cfs-quota-enforced) and keeps every other key.
//   - AL2: MIME multipart with the user's parts first and a shell script
//     calling /etc/eks/bootstrap.sh with --kubelet-extra-args last.
//   - Custom: the user's user data, unchanged (may be empty).
//
// # Invariants
//
//   - Render is a pure function of its Input: the same input gives the same
//     bytes (labels, taints and map entries are sorted; the MIME boundary is
//     derived from the content).
//   - Labels the kubelet may not set on itself (kubernetes.io and k8s.io
//     domains other than the ones it is allowed, see KubeletMaySet) are
//     left out of the node labels; they reach the node through
//     registration instead.
//   - Bad user data is an *Error naming spec.userData and what is wrong;
//     nothing panics on any input (FuzzParse, FuzzRender).
package userdata
