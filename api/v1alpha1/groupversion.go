// Package v1alpha1 holds the berth.dev/v1alpha1 API: the Release, a Helm chart released into a
// namespace by berth's controller, and the Rollout, one chart released into many clusters wave
// by wave.
//
// +kubebuilder:object:generate=true
// +groupName=berth.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of the types of this package.
var GroupVersion = schema.GroupVersion{Group: "berth.dev", Version: "v1alpha1"}

// AddToScheme adds the types of this package to s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Release{}, &ReleaseList{}, &Rollout{}, &RolloutList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
