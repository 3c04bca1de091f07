package repair

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Policies are the node conditions repaired on AWS under the
// NodeRepair gate, with the peer's tolerations and drain bounds: the
// kubelet's Ready condition (False or Unknown, 30 minutes), and the
// conditions of the EKS node monitoring agent (accelerated hardware by
// NVIDIA XID family, storage, networking, kernel, container runtime).
// With reboot (the RebootForRepair gate) the GPU faults a reboot may
// clear reboot the instance (up to cloudprovider.MaxRepairReboots times)
// rather than replace it; everything else is replaced.
func Policies(reboot bool) []cloudprovider.RepairPolicy {
	ten, five := 10*time.Minute, 5*time.Minute
	p := func(typ corev1.NodeConditionType, st corev1.ConditionStatus, re string, tol time.Duration, grace *time.Duration) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: typ, ConditionStatus: st, ReasonRegex: re, TolerationDuration: tol, TerminationGracePeriod: grace}
	}
	clearable := p("AcceleratedHardwareReady", corev1.ConditionFalse, `.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`, 10*time.Minute, &five)
	if reboot {
		clearable.Action = cloudprovider.RepairReboot
	}
	return []cloudprovider.RepairPolicy{
		p(corev1.NodeReady, corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		p(corev1.NodeReady, corev1.ConditionUnknown, ".*", 30*time.Minute, &ten),
		// GPU faults a reboot may clear: rebooted under RebootForRepair,
		// replaced otherwise.
		clearable,
		// Fatal GPU faults.
		p("AcceleratedHardwareReady", corev1.ConditionFalse, `.*XID(64|74|79|119|120).*`, 10*time.Minute, &five),
		// Any other GPU fault: the fallback, with a longer toleration.
		p("AcceleratedHardwareReady", corev1.ConditionFalse, "", 30*time.Minute, &ten),
		p("StorageReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		p("NetworkingReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		p("KernelReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
		p("ContainerRuntimeReady", corev1.ConditionFalse, ".*", 30*time.Minute, &ten),
	}
}
