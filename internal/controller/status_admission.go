package controller

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/api/v1alpha1"
)

// ReasonAdmissionDenied is an operation an admission check refused: a validating or mutating
// webhook, or a ValidatingAdmissionPolicy, denied one of its requests. The API server says so
// with 403 Forbidden, as it says a missing permission, but no right granted to the Release's
// account changes it: what the policy checks must change.
const ReasonAdmissionDenied = "AdmissionDenied"

// admissionDenied says err is the API server's Forbidden for a request an admission webhook
// ("admission webhook "NAME" denied the request") or a ValidatingAdmissionPolicy
// ("ValidatingAdmissionPolicy 'NAME' with binding 'B' denied request") refused, not RBAC.
func admissionDenied(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return false
	}
	msg := status.Status().Message
	return strings.Contains(msg, "denied the request") || strings.Contains(msg, "denied request")
}

// admissionBlocker is the blocker of an operation an admission check refused; msg is the API
// server's message (redacted with the rest of the status), obj the object it refused.
func admissionBlocker(obj, msg string) v1alpha1.Blocker {
	return v1alpha1.Blocker{Kind: "admission", Object: obj, Message: msg,
		Next: "the cluster's admission policy refused the object: change the chart or its values so that the policy the message names admits it, or ask the policy's owner; no right granted to the Release's account changes it"}
}
