// Package clusterdump reads a live cluster, read-only, and writes it as
// `dovetail simulate` input: the YAML behind `dovetail snapshot`.
//
// Read lists (get/list only, paged with a limit) NodePools, EC2NodeClasses,
// NodeClaims, Nodes, DaemonSets, PodDisruptionBudgets, PersistentVolumeClaims,
// PersistentVolumes, StorageClasses, Namespaces and Pods. Pods are written
// as they are, with their owner references; their Deployments, ReplicaSets,
// StatefulSets and Jobs are never written, because simulate would expand
// them into pods a second time.
//
// Every object is reduced to what scheduling and disruption decisions need
// (the Sanitize* functions; pure, tested without an API server). Of a pod
// that is its labels, owner references, the scheduling-relevant annotations
// (AllowedPodAnnotations), requests and limits, host ports, affinity,
// tolerations, topology spread, node selector and nodeName, priority,
// overhead, runtime class, the volumes that constrain placement
// (persistentVolumeClaim, ephemeral, emptyDir) and the status that tells an
// active pod (phase, conditions, start time, nominated node). Never: images,
// env, envFrom, command, args, secrets or configmap references, image pull
// secrets, service accounts, probes, security contexts. EC2NodeClasses lose
// spec.userData (it may hold secrets); Nodes keep labels, taints, provider
// ID, capacity, allocatable and conditions (no addresses or images).
//
// What must not live here: the simulation itself (pkg/simulate), flag
// parsing and exit codes (internal/cli/snapshot), and any write to the
// cluster.
package clusterdump
