package release

import (
	"fmt"
	"maps"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// ReservedLabelsError is a release label that Helm's storage keeps for itself.
type ReservedLabelsError struct {
	// Reserved are the names Helm reserves.
	Reserved []string
}

func (e *ReservedLabelsError) Error() string {
	return fmt.Sprintf("release labels may not use the names Helm's storage reserves: %v", e.Reserved)
}

// CheckLabels refuses labels that Helm's storage reserves (name, owner, status, version, ...).
func CheckLabels(labels map[string]string) error {
	if driver.ContainsSystemLabels(labels) {
		return &ReservedLabelsError{Reserved: driver.GetSystemLabels()}
	}
	return nil
}

// MergeLabels returns the labels of an upgrade as Helm merges them: the current revision's,
// overridden by the desired ones, without those whose value is "null".
func MergeLabels(current, desired map[string]string) map[string]string {
	labels := maps.Clone(current)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, desired)
	for k, v := range labels {
		if v == "null" {
			delete(labels, k)
		}
	}
	if len(labels) == 0 {
		return nil
	}
	return labels
}
