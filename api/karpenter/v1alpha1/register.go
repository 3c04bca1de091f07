package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of NodeOverlay (the group of NodePool and
// NodeClaim, at version v1alpha1).
const Group = "karpenter.sh"

var (
	// GroupVersion is karpenter.sh/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds NodeOverlay and its list to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodeOverlay{}, &NodeOverlayList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
