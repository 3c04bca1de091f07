package requirements

import corev1 "k8s.io/api/core/v1"

// Operator is a requirement operator as written in a NodePool, a NodeClaim or
// a pod's node affinity. The first six are Kubernetes' node-selector
// operators; Gte and Lte are the Karpenter v1 inclusive extensions.
type Operator string

// The operators New accepts.
const (
	In           Operator = "In"
	NotIn        Operator = "NotIn"
	Exists       Operator = "Exists"
	DoesNotExist Operator = "DoesNotExist"
	Gt           Operator = "Gt"
	Lt           Operator = "Lt"
	Gte          Operator = "Gte"
	Lte          Operator = "Lte"
)

// validOperators lists every operator in sorted order, for error messages.
var validOperators = []Operator{DoesNotExist, Exists, Gt, Gte, In, Lt, Lte, NotIn}

// Operators returns every supported operator, sorted.
func Operators() []Operator {
	return append([]Operator(nil), validOperators...)
}

// Valid reports whether op is one of the supported operators.
func (op Operator) Valid() bool {
	switch op {
	case In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte:
		return true
	}
	return false
}

// NodeSelectorOperator converts op to the corev1 type. Gte and Lte have no
// corev1 constant; they convert to the same string.
func (op Operator) NodeSelectorOperator() corev1.NodeSelectorOperator {
	return corev1.NodeSelectorOperator(op)
}
