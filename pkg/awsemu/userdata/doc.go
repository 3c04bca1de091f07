// Package userdata reads what a node's kubelet would register with from EC2
// user data, for the local emulator's node booter: node labels, taints, max
// pods, reserved resources and eviction thresholds.
//
// Three formats are understood, as the EKS AMIs read them:
//
//   - AL2023 nodeadm: a NodeConfig (apiVersion node.eks.aws/v1alpha1),
//     bare or as an application/node.eks.aws part of a MIME multipart
//     document; several NodeConfigs merge in order. spec.kubelet.config
//     (maxPods, kubeReserved, systemReserved, evictionHard, evictionSoft,
//     registerWithTaints, clusterDNS) and spec.kubelet.flags
//     (--node-labels, --register-with-taints, --max-pods, ...) are read.
//   - Bottlerocket: TOML [settings.kubernetes] with max-pods, node-labels,
//     node-taints ("key" = ["value:Effect"]), kube-reserved,
//     system-reserved, eviction-hard, eviction-soft.
//   - AL2: a shell script (bare or a text/x-shellscript MIME part) calling
//     /etc/eks/bootstrap.sh CLUSTER with --kubelet-extra-args '...' and
//     --use-max-pods false (then the kubelet default of 110 pods applies
//     unless --max-pods is given).
//
// Other scripts and MIME parts are ignored (FormatScript). Parse detects the
// format. Invariants: Parse never panics; every failure is an *Error naming
// the format and the 1-based line of the input (MIME parts keep the line
// numbers of the whole document); label keys and values, taint effects and
// quantities are validated as the kubelet would. See ExampleParse.
package userdata
