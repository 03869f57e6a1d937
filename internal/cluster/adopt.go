package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berthdev/berth/internal/resource"
)

// adoptable reports whether e holds fields of the object's main resource that berth's apply must
// own before it can remove those the chart dropped: fields Helm set with a client-side apply
// (Helm 3, or Helm 4 with --server-side=false: manager "helm", operation Update), and fields berth
// applied under its former manager.
func adoptable(e metav1.ManagedFieldsEntry) bool {
	if e.Subresource != "" {
		return false
	}
	return e.Manager == formerManager || (e.Manager == FieldManager && e.Operation != metav1.ManagedFieldsOperationApply)
}

// SetByHelm reports whether obj has fields of Helm's client-side apply or of berth's former
// field manager, so that AdoptFields has work to do.
func SetByHelm(obj *unstructured.Unstructured) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), adoptable)
}

// AdoptFields moves the fields Helm's client-side apply or berth's former field manager set on
// the object id to the Apply entry of FieldManager, so that the next server-side apply, berth's
// or Helm's, also removes the fields that left the chart, as Helm's own upgrade would. Only
// managedFields change; an object with nothing adoptable is left alone.
func (c *Client) AdoptFields(ctx context.Context, id resource.Identity) error {
	ri, _, err := c.resourceFor(id, "")
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	// The resourceVersion makes the patch fail rather than drop a change made meanwhile (a
	// controller updating the status, say); then it is done again on the new state.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := ri.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		adopted, changed, err := adoptManagedFields(live.GetManagedFields(), FieldManager)
		if err != nil || !changed {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"managedFields": adopted, "resourceVersion": live.GetResourceVersion(),
		}})
		if err != nil {
			return err
		}
		_, err = ri.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: take over the fields of Helm's client-side apply: %w", id, err)
	}
	return nil
}

// adoptManagedFields moves the fields of the adoptable entries into the Apply entry of manager to.
func adoptManagedFields(entries []metav1.ManagedFieldsEntry, to string) ([]metav1.ManagedFieldsEntry, bool, error) {
	var out []metav1.ManagedFieldsEntry
	var union *fieldpath.Set
	apiVersion := ""
	for _, e := range entries {
		if !adoptable(e) {
			out = append(out, e)
			continue
		}
		s, err := decodeFields(e)
		if err != nil {
			return nil, false, err
		}
		if union == nil {
			union, apiVersion = s, e.APIVersion
		} else {
			union = union.Union(s)
		}
	}
	if union == nil {
		return entries, false, nil
	}
	for i, e := range out {
		if e.Manager == to && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			s, err := decodeFields(e)
			if err != nil {
				return nil, false, err
			}
			if err := encodeFields(&out[i], s.Union(union)); err != nil {
				return nil, false, err
			}
			return out, true, nil
		}
	}
	e := metav1.ManagedFieldsEntry{Manager: to, Operation: metav1.ManagedFieldsOperationApply, APIVersion: apiVersion}
	if err := encodeFields(&e, union); err != nil {
		return nil, false, err
	}
	return append(out, e), true, nil
}

func decodeFields(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
		return nil, fmt.Errorf("fields of manager %s: %w", e.Manager, err)
	}
	return s, nil
}

func encodeFields(e *metav1.ManagedFieldsEntry, s *fieldpath.Set) error {
	raw, err := s.ToJSON()
	if err != nil {
		return err
	}
	e.FieldsType = "FieldsV1"
	e.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	return nil
}
