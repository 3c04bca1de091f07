package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of CapacityBuffer.
const Group = "autoscaling.x-k8s.io"

var (
	// GroupVersion is autoscaling.x-k8s.io/v1beta1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: "v1beta1"}
	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds CapacityBuffer and its list to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &CapacityBuffer{}, &CapacityBufferList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
