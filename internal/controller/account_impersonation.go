package controller

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ReasonImpersonationForbidden is a Release whose ServiceAccount the controller may not act as:
// the API server refused the controller's own account the right to impersonate it (the chart's
// impersonateNamespaces does not list the Release's namespace).
const ReasonImpersonationForbidden = "ImpersonationForbidden"

// impersonationForbidden says err is the API server refusing the controller to act as a
// ServiceAccount: a Forbidden whose details name serviceaccounts and whose message says the
// user cannot impersonate, as the API server's impersonation filter answers.
func impersonationForbidden(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return false
	}
	s := status.Status()
	return s.Details != nil && s.Details.Kind == "serviceaccounts" && strings.Contains(s.Message, "cannot impersonate")
}

// impersonationNext says what lets the controller act as the Release's account in ns.
func impersonationNext(ns string) string {
	return fmt.Sprintf("the controller's own account may not act as ServiceAccounts of namespace %s: list %s in the berth-controller chart's impersonateNamespaces, or bind the controller's account a Role granting impersonate on serviceaccounts in %s", ns, ns, ns)
}
