package snapshot

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// LeaveOutBroken returns c without the NodePools Build cannot use (no
// nodeClassRef, a kind other than EC2NodeClass, an EC2NodeClass that does
// not exist) and the NodeClaims whose requirements do not parse, with one
// notice per object left out, as the controllers leave such objects out
// and carry on with the rest. c is not changed; the result shares its
// slices' elements.
func LeaveOutBroken(c *Cluster) (*Cluster, []string) {
	classes := make(map[string]bool, len(c.NodeClasses))
	for _, nc := range c.NodeClasses {
		classes[nc.Name] = true
	}
	out := *c
	out.NodePools = make([]*karpv1.NodePool, 0, len(c.NodePools))
	var notices []string
	for _, np := range c.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		switch {
		case ref == nil:
			notices = append(notices, fmt.Sprintf("NodePool %s left out: it references no EC2NodeClass", np.Name))
		case !nodeClassSupported(ref):
			notices = append(notices, fmt.Sprintf("NodePool %s left out: its nodeClassRef %s/%s is not %s/EC2NodeClass", np.Name, ref.Group, ref.Kind, awsv1.Group))
		case !classes[ref.Name]:
			notices = append(notices, fmt.Sprintf("NodePool %s left out: its EC2NodeClass %s does not exist", np.Name, ref.Name))
		default:
			out.NodePools = append(out.NodePools, np)
		}
	}
	out.NodeClaims = make([]*karpv1.NodeClaim, 0, len(c.NodeClaims))
	for _, nc := range c.NodeClaims {
		if _, errs := Requirements(nc.Spec.Requirements, field.NewPath("spec", "requirements")); len(errs) > 0 {
			notices = append(notices, fmt.Sprintf("NodeClaim %s left out: %v", nc.Name, errs.ToAggregate()))
			continue
		}
		out.NodeClaims = append(out.NodeClaims, nc)
	}
	return &out, notices
}
