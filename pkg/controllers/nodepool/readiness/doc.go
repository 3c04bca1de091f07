// Package readiness keeps a NodePool's conditions current:
//
//   - ValidationSucceeded: what the CRD schema cannot check
//     (NodePool.RuntimeValidate: template label and taint syntax); False
//     with the field errors otherwise.
//   - NodeClassReady: the referenced EC2NodeClass exists and its Ready
//     condition is True for its current generation (Unknown until the node
//     class controller has resolved it; False with the class's message).
//     status.nodeClassObservedGeneration records the generation judged.
//   - Ready: both of the above (computed by NodePool.SetCondition).
//   - DisruptionSupported: False, reason Unsupported, naming each
//     disruption field or value dovetail does not act on (today a budget
//     reason Unhealthy: there is no node repair); absent when there is
//     none. It does not affect Ready.
//
// Provisioning launches only from Ready pools. The controller watches
// EC2NodeClasses and re-checks every pool that references a changed one.
package readiness
