package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
)

// Reasons of values that cannot be read.
const (
	ReasonValuesMissing = "ValuesMissing"
	ReasonInvalidValues = "InvalidValues"
)

// defaultValuesKey is the key a valuesFrom reference reads when it names none.
const defaultValuesKey = "values.yaml"

// valuesSource is what one valuesFrom reference read: the key's content, or nothing when an
// optional object or key is missing.
type valuesSource struct {
	Ref     v1alpha1.ValuesReference
	Data    []byte
	Missing bool
}

// ValuesError says that the content of a valuesFrom reference cannot be used as values.
type ValuesError struct {
	Kind, Namespace, Name, Key string
	Err                        error
}

func (e *ValuesError) Error() string {
	return fmt.Sprintf("%s/%s/%s key %s: %v: fix the key's content, or the reference in spec.valuesFrom", e.Kind, e.Namespace, e.Name, e.Key, e.Err)
}

func (e *ValuesError) Unwrap() error { return e.Err }

// readValues reads each valuesFrom reference of d's Release with r, in order.
func readValues(ctx context.Context, r keyReader, refs []v1alpha1.ValuesReference) ([]valuesSource, error) {
	out := make([]valuesSource, 0, len(refs))
	for _, ref := range refs {
		if ref.Key == "" {
			ref.Key = defaultValuesKey
		}
		data, err := r.read(ctx, ref.Kind, ref.Name, ref.Key)
		var missing *MissingError
		switch {
		case errors.As(err, &missing) && ref.Optional:
			out = append(out, valuesSource{Ref: ref, Missing: true})
			continue
		case errors.As(err, &missing):
			missing.Reason = ReasonValuesMissing
			missing.Next = "create it, or mark the reference optional in spec.valuesFrom"
			return nil, missing
		case err != nil:
			return nil, err
		}
		out = append(out, valuesSource{Ref: ref, Data: data})
	}
	return out, nil
}

// mergeValues merges the values of sources in order, later ones winning, then spec's values
// over them, as Flux's helm-controller does: a key's content is a values file deep-merged into
// what came before, or, with a targetPath, one value set at that path as helm's --set sets it
// (a quoted content is set as a string). ns is the sources' namespace, for errors.
func mergeValues(ns string, sources []valuesSource, spec map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range sources {
		if s.Missing {
			continue
		}
		fail := func(err error) error {
			return &ValuesError{Kind: s.Ref.Kind, Namespace: ns, Name: s.Ref.Name, Key: s.Ref.Key, Err: err}
		}
		if s.Ref.TargetPath != "" {
			if err := setPath(out, s.Ref.TargetPath, string(s.Data)); err != nil {
				return nil, fail(fmt.Errorf("set targetPath %s: %w", s.Ref.TargetPath, err))
			}
			continue
		}
		vals, err := common.ReadValues(s.Data)
		if err != nil {
			return nil, fail(fmt.Errorf("not a values file: %w", err))
		}
		out = loader.MergeMaps(out, vals)
	}
	return loader.MergeMaps(out, spec), nil
}

// setPath sets value at the dotted path of values with Helm's strvals, as --set does; a value
// in single or double quotes is set as a string.
func setPath(values map[string]any, path, value string) error {
	quoted := len(value) >= 2 && (value[0] == '"' && value[len(value)-1] == '"' || value[0] == '\'' && value[len(value)-1] == '\'')
	if quoted {
		return strvals.ParseIntoString(path+"="+strings.Trim(value, `"'`), values)
	}
	return strvals.ParseInto(path+"="+value, values)
}

// digestOf is the sha256 of values; equal values have equal digests.
func digestOf(vals map[string]any) (string, error) {
	// encoding/json sorts map keys.
	canonical, err := json.Marshal(vals)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// resolveValues reads d's valuesFrom with r and sets d's values and their digest to the merged
// result.
func resolveValues(ctx context.Context, r keyReader, d *desired) error {
	if len(d.ValuesFrom) == 0 {
		return nil
	}
	sources, err := readValues(ctx, r, d.ValuesFrom)
	if err != nil {
		return err
	}
	vals, err := mergeValues(r.namespace, sources, d.Values)
	if err != nil {
		return err
	}
	digest, err := digestOf(vals)
	if err != nil {
		return fmt.Errorf("digest of the values: %w", err)
	}
	d.Values, d.ValuesDigest = vals, digest
	return nil
}

// valuesFromOf checks spec.valuesFrom and gives each reference its default key.
func valuesFromOf(refs []v1alpha1.ValuesReference) ([]v1alpha1.ValuesReference, error) {
	out := make([]v1alpha1.ValuesReference, 0, len(refs))
	for i, ref := range refs {
		field := fmt.Sprintf("valuesFrom[%d]", i)
		switch {
		case ref.Kind != "ConfigMap" && ref.Kind != "Secret":
			return nil, invalid(field+".kind", "is %q: set ConfigMap or Secret", ref.Kind)
		case ref.Name == "":
			return nil, invalid(field+".name", "is required: name the %s, in the Release's namespace, that holds the values", ref.Kind)
		}
		if ref.Key == "" {
			ref.Key = defaultValuesKey
		}
		out = append(out, ref)
	}
	return out, nil
}

func (e *ValuesError) conditionReason() string { return ReasonInvalidValues }
