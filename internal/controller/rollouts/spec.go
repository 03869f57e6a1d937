package rollouts

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
)

// defaultKubeConfigKey is the key of a selected kubeconfig Secret, as Cluster API writes it.
const defaultKubeConfigKey = "value"

// MaxClusters bounds the clusters of one Rollout, named and selected: its status holds a line
// for each.
const MaxClusters = 500

// defaultTimeout is a Release's timeout when its spec gives none.
const defaultTimeout = 5 * time.Minute

// SpecError is a Rollout's spec the controller cannot act on: the field and what to change.
type SpecError struct {
	Field, Problem string
}

func (e *SpecError) Error() string { return fmt.Sprintf("spec.%s %s", e.Field, e.Problem) }

// member is one cluster of a Rollout's wave: its name, its Release's name, and the spec its
// Release gets for the rollout's template.
type member struct {
	name, release string
	spec          v1alpha1.ReleaseSpec
}

// plan is a Rollout's spec resolved: its waves' clusters, and the target's digest.
type plan struct {
	target string
	waves  [][]member
}

// resolve resolves ro's waves against the kubeconfig Secrets of its namespace (secrets lists
// their metadata) into clusters, each with the spec of its Release, and digests the target. A
// cluster named (or selected) by an earlier wave is that wave's only.
func resolve(ctx context.Context, ro *v1alpha1.Rollout, secrets client.Reader) (*plan, error) {
	tmpl := ro.Spec.Template.Spec
	if tmpl.KubeConfig != nil {
		return nil, &SpecError{Field: "template.spec.kubeConfig", Problem: "is the rollout's to set, from each cluster of its waves: remove it"}
	}
	if tmpl.RollbackTo != nil {
		return nil, &SpecError{Field: "template.spec.rollbackTo", Problem: "is the rollout's to set when it rolls a wave back: remove it"}
	}
	base, err := valuesOf(tmpl.Values)
	if err != nil {
		return nil, &SpecError{Field: "template.spec.values", Problem: err.Error()}
	}
	digest := sha256.New()
	writeJSON(digest, tmpl)
	seen := map[string]string{}
	p := &plan{}
	for w, wave := range ro.Spec.Waves {
		field := fmt.Sprintf("waves[%d]", w)
		waveValues, err := valuesOf(wave.Values)
		if err != nil {
			return nil, &SpecError{Field: field + ".values", Problem: err.Error()}
		}
		writeJSON(digest, wave.Values)
		var members []member
		add := func(name string, kc v1alpha1.KubeConfigReference, values map[string]any, field string) error {
			if prev, ok := seen[name]; ok {
				if prev == wave.Name {
					return &SpecError{Field: field, Problem: fmt.Sprintf("names cluster %s a second time in wave %s: name each cluster once", name, wave.Name)}
				}
				return nil // an earlier wave's
			}
			seen[name] = wave.Name
			release := ro.Name + "-" + name
			if errs := validation.IsDNS1123Subdomain(release); len(errs) > 0 || len(release) > 253 {
				return &SpecError{Field: field, Problem: fmt.Sprintf("makes the Release name %q, which is not a valid name: give the cluster a shorter name", release)}
			}
			spec := *tmpl.DeepCopy()
			spec.KubeConfig = &kc
			spec.ReleaseName = cmp.Or(tmpl.ReleaseName, ro.Name)
			merged := loader.MergeMaps(loader.MergeMaps(clone(base), clone(waveValues)), values)
			if len(merged) > 0 {
				raw, err := json.Marshal(merged)
				if err != nil {
					return &SpecError{Field: field + ".values", Problem: err.Error()}
				}
				spec.Values = &apiextensionsv1.JSON{Raw: raw}
			}
			members = append(members, member{name: name, release: release, spec: spec})
			return nil
		}
		for c, cl := range wave.Clusters {
			cf := fmt.Sprintf("%s.clusters[%d]", field, c)
			values, err := valuesOf(cl.Values)
			if err != nil {
				return nil, &SpecError{Field: cf + ".values", Problem: err.Error()}
			}
			writeJSON(digest, cl.Values)
			if err := add(cmp.Or(cl.Name, cl.KubeConfig.SecretRef.Name), cl.KubeConfig, values, cf); err != nil {
				return nil, err
			}
		}
		if wave.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(wave.Selector)
			if err != nil {
				return nil, &SpecError{Field: field + ".selector", Problem: err.Error()}
			}
			names, err := selected(ctx, secrets, ro.Namespace, sel)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				kc := v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: name, Key: defaultKubeConfigKey}}
				if err := add(name, kc, nil, field+".selector"); err != nil {
					return nil, err
				}
			}
		}
		p.waves = append(p.waves, members)
	}
	if len(seen) > MaxClusters {
		return nil, &SpecError{Field: "waves", Problem: fmt.Sprintf("name or select %d clusters, more than the %d a Rollout may have: split them over several Rollouts", len(seen), MaxClusters)}
	}
	p.target = hex.EncodeToString(digest.Sum(nil))[:40]
	return p, nil
}

// selected are the names of the Secrets of namespace ns that sel selects, in order.
func selected(ctx context.Context, secrets client.Reader, ns string, sel labels.Selector) ([]string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := secrets.List(ctx, &list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list the kubeconfig Secrets a wave selects: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names, nil
}

// valuesOf reads values given as JSON.
func valuesOf(v *apiextensionsv1.JSON) (map[string]any, error) {
	if v == nil || len(v.Raw) == 0 {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(v.Raw, &m); err != nil {
		return nil, fmt.Errorf("is not a map of values: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// clone is a deep copy of values, which MergeMaps changes in place.
func clone(values map[string]any) map[string]any {
	raw, _ := json.Marshal(values) // read from JSON: it encodes
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// writeJSON writes v's JSON, with its length, to w.
func writeJSON(w interface{ Write([]byte) (int, error) }, v any) {
	raw, _ := json.Marshal(v) // API types: they encode
	fmt.Fprintf(w, "%d:", len(raw))
	w.Write(raw)
}
