package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// recordObject is the Secret or ConfigMap that holds one revision of a release.
type recordObject struct {
	name    string
	uid     types.UID
	version int
	labels  map[string]string
}

// recordObjects lists, writes and deletes the objects that hold a release's records, listing and
// deleting without decoding what they hold.
type recordObjects struct {
	list   func(ctx context.Context, selector string) ([]recordObject, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	// write creates or replaces the object of one record.
	write recordWriter
}

func secretRecords(c typedcorev1.SecretInterface) recordObjects {
	return recordObjects{delete: c.Delete, write: secretWriter(c), list: func(ctx context.Context, selector string) ([]recordObject, error) {
		l, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		return recordsOf(l.Items), nil
	}}
}

func configMapRecords(c typedcorev1.ConfigMapInterface) recordObjects {
	return recordObjects{delete: c.Delete, write: configMapWriter(c), list: func(ctx context.Context, selector string) ([]recordObject, error) {
		l, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		return recordsOf(l.Items), nil
	}}
}

// recordsOf is the record object of each of items, Secrets or ConfigMaps; one with no version
// label (not Helm's) has version 0.
func recordsOf[T any, P interface {
	*T
	metav1.Object
}](items []T) []recordObject {
	out := make([]recordObject, len(items))
	for i := range items {
		m := P(&items[i])
		v, _ := strconv.Atoi(m.GetLabels()["version"])
		out[i] = recordObject{name: m.GetName(), uid: m.GetUID(), version: v, labels: m.GetLabels()}
	}
	return out
}

// Purge deletes every revision of a release and returns the versions it deleted, oldest first.
// Unlike Delete of each revision, it reads no record's contents: one list of the objects Helm's
// driver labels as the release's (owner=helm, name=NAME), then every one deleted at once, each
// only if it is still the object listed. A release with no revisions has nothing to purge. It
// deletes as many as it can and joins the errors of those it could not delete.
func (s *HelmStore) Purge(ctx context.Context, name string) ([]int, error) {
	objs := s.records(s.namespace)
	records, err := s.recordsOf(ctx, name)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(records))
	var wg sync.WaitGroup
	for i, r := range records {
		wg.Go(func() {
			uid := r.uid // deleted only if it is still the object listed
			opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
			if err := objs.delete(ctx, r.name, opts); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("release %s/%s: delete revision %d: %w", s.namespace, name, r.version, err)
			}
		})
	}
	wg.Wait()
	var deleted []int
	for i, r := range records {
		if errs[i] == nil {
			deleted = append(deleted, r.version)
		}
	}
	slices.Sort(deleted)
	return deleted, errors.Join(errs...)
}
