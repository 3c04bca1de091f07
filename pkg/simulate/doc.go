// Package simulate is the engine of `dovetail simulate`: it reads
// Kubernetes and Karpenter manifests, expands workloads into the pods their
// controllers would create, takes a snapshot (pkg/snapshot) and runs the
// scheduling engine once, then renders the plan.
//
//	files ──Manifests.Read──▶ Manifests ──Cluster──▶ snapshot.Cluster
//	      ──snapshot.Build──▶ engine.Input ──engine.Solve──▶ Plan ──FromPlan──▶ Result ──Render──▶ table|json|yaml
//
// With --disruption (RunDisruption) the files are a running cluster and the
// disruption planner runs instead:
//
//	Manifests ──DisruptionInput──▶ disruption.Input (snapshot + pool policies,
//	      node states, adoption, catalog prices, PDB allowances)
//	      ──disruption.Compute──▶ Plan ──FromDisruptionPlan──▶ DisruptionResult ──RenderDisruption──▶ table|json|yaml
//
// # Vocabulary
//
//   - Document: one YAML document of a file (separated by "---" lines),
//     numbered from 1 in the file; a kind: List document holds several
//     objects (items[i]).
//   - Origin: file, document and first line of an object, for errors.
//   - Workload expansion: Deployments, ReplicaSets, StatefulSets and Jobs
//     become pods named <owner>-<n>; DaemonSets are overhead on new nodes
//     and get pods on the existing Nodes they would run on.
//   - Buffers: CapacityBuffers are resolved against the input's
//     PodTemplates and scalables (snapshot.ResolveBuffer, the controller's
//     rules) into status and planned as the engine's Buffers, in both
//     modes; Result.Buffers reports each buffer's room, and a buffer that
//     does not resolve is a warning naming its file and field (buffers.go).
//   - Adoption: a node without karpenter.sh/nodepool is given to the
//     highest-weight NodePool that could have made it (DisruptionInput).
//   - Catalog file: an --instance-types file that replaces the built-in EC2
//     catalog (CatalogFile).
//
// # Errors
//
// Everything wrong with the input is reported, as InputErrors: each
// *InputError names the file, the document, its first line, the object and,
// where possible, the field path (spec.template.spec.requirements[0].key);
// all wrap ErrBadInput. NodePools, NodeClaims and EC2NodeClasses are also
// checked against the embedded CRDs (api/crds) with the API server's
// schema and CEL validator (crdvalidate.go). Reading, expanding and the
// whole plan path never panic on any input (FuzzExpand reads and
// expands, FuzzSimulate plans and renders; `make fuzz`). Pods
// the engine cannot place are not errors: they are listed in
// Result.Unschedulable with the engine's reason code.
//
// # Bounds
//
// Expansion is counted before any pod is made (Options.MaxPods, default
// DefaultMaxPods); a workload's pods share its template, so expanding costs
// a small Pod per replica. Quantities beyond engine.MaxQuantity and prices
// above MaxPricePerHour in catalog files, Nodes and annotations are input
// errors; no output holds NaN or an infinity.
//
// # Determinism
//
// The same files give the same plan, node names included; only
// Result.DurationSeconds, measured around engine.Solve with Options.Now,
// varies. See ExampleRun.
package simulate
