package resource

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helm's resource policy annotation and its one value.
const (
	ResourcePolicyAnnotation = "helm.sh/resource-policy"
	KeepPolicy               = "keep"
)

// IsKept reports whether obj carries helm.sh/resource-policy: keep, so that uninstall and upgrade
// leave it in place. The value is compared trimmed and lowercased, as Helm's uninstall does.
func IsKept(obj *unstructured.Unstructured) bool {
	v, ok := obj.GetAnnotations()[ResourcePolicyAnnotation]
	return ok && strings.ToLower(strings.TrimSpace(v)) == KeepPolicy
}
