package controller

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
)

// The preflight of every operation reads three cluster-wide lists (the admission webhook
// configurations of both kinds and the APIServices) and its namespace, as the Release's account:
// four requests a Release, and an Event when the account may not read them, which an account
// whose rights end at its namespace may not. A controller that may list and watch them
// (whatever namespaces it watches Releases in) watches them itself, and an operation whose
// preflight could find nothing in what it watches (doctor.Clear) reads nothing as the account.
// What the controller sees is never shown to the account: when something there could block, the
// preflight reads as the account, as before, and tells it only what it may read.

// clusterViewCheckTimeout bounds the access reviews that decide whether the controller watches
// the cluster-wide objects of the preflight.
const clusterViewCheckTimeout = 10 * time.Second

// clusterViewKinds are the kinds the cluster view watches: what a preflight reads.
var clusterViewKinds = []schema.GroupVersionResource{
	admissionv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
	admissionv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"),
	{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
	{Version: "v1", Resource: "namespaces"},
}

// apiServiceList is an empty list of APIServices, read from the cache as unstructured.
func apiServiceList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIServiceList"})
	return l
}

// ClusterViewUnavailableError says why the controller does not watch what a preflight reads:
// it may not list and watch one of the kinds, or could not ask whether it may.
type ClusterViewUnavailableError struct {
	// Resource is the resource the controller may not list and watch.
	Resource schema.GroupVersionResource
	// Err is why it could not ask, nil when it was refused.
	Err error
}

func (e *ClusterViewUnavailableError) Error() string {
	what := e.Resource.Resource
	if e.Resource.Group != "" {
		what += "." + e.Resource.Group
	}
	if e.Err != nil {
		return fmt.Sprintf("whether the controller may list and watch %s: %v", what, e.Err)
	}
	return "the controller may not list and watch " + what
}

func (e *ClusterViewUnavailableError) Unwrap() error { return e.Err }

// mayWatchClusterView asks the API server whether the controller of cfg may list and watch
// every kind of the cluster view, whatever namespaces it watches Releases in; a
// *ClusterViewUnavailableError when it may not.
func mayWatchClusterView(cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterViewCheckTimeout)
	defer cancel()
	for _, gvr := range clusterViewKinds {
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
			}}
			got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return &ClusterViewUnavailableError{Resource: gvr, Err: err}
			}
			if !got.Status.Allowed {
				return &ClusterViewUnavailableError{Resource: gvr}
			}
		}
	}
	return nil
}

// clusterView reads what the controller watches of what a preflight reads.
type clusterView struct{ cache cache.Cache }

// watchClusterView starts, with the cache c, the watches of the cluster view.
func watchClusterView(c cache.Cache) (*clusterView, error) {
	for _, obj := range []client.Object{&admissionv1.ValidatingWebhookConfiguration{}, &admissionv1.MutatingWebhookConfiguration{}, metadataOf("Namespace")} {
		if _, err := c.GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	apiService := &unstructured.Unstructured{}
	apiService.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"})
	if _, err := c.GetInformer(context.Background(), apiService); err != nil {
		return nil, fmt.Errorf("watch APIServices: %w", err)
	}
	return &clusterView{cache: c}, nil
}

// clear reports whether the preflight of op on reqs in namespace could find nothing in what the
// view holds (doctor.Clear); false when the view cannot be read.
func (v *clusterView) clear(ctx context.Context, mapper meta.RESTMapper, op release.Operation, namespace string, reqs []doctor.Request) bool {
	var validating admissionv1.ValidatingWebhookConfigurationList
	var mutating admissionv1.MutatingWebhookConfigurationList
	apiServices := apiServiceList()
	for _, l := range []client.ObjectList{&validating, &mutating, apiServices} {
		if err := v.cache.List(ctx, l); err != nil {
			return false
		}
	}
	seen := doctor.Seen{
		Validating: validating.Items, Mutating: mutating.Items, APIServices: apiServices.Items,
		Namespace: func(name string) *metav1.PartialObjectMetadata {
			ns := metadataOf("Namespace")
			if err := v.cache.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
				return nil
			}
			return ns
		},
	}
	return doctor.Clear(ctx, mapper, op, namespace, reqs, seen)
}

// keepNamespace keeps of a Namespace's metadata what a preflight reads: its name, labels (which
// webhooks' namespaceSelectors match) and deletion.
func keepNamespace(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: m.Labels, DeletionTimestamp: m.DeletionTimestamp,
	}}, nil
}
