package controller

import (
	"context"
	"errors"
	"fmt"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller/inputs"
)

// Reasons of values that cannot be read.
const (
	ReasonValuesMissing = "ValuesMissing"
	ReasonInvalidValues = "InvalidValues"
)

// resolveValues reads d's valuesFrom with r, decrypts those that ask for it (with the
// process's cloud KMS identity too when cloudKMS), and sets d's values and their digest to the
// merged result (inputs.ReadValues, inputs.MergeValues), and d's EncryptedValues. A reference
// that is not there is a *inputs.MissingError of reason ValuesMissing; one that cannot be
// decrypted a *DecryptionError.
func resolveValues(ctx context.Context, r inputs.KeyReader, d *desired, cloudKMS bool) error {
	if len(d.ValuesFrom) == 0 {
		return nil
	}
	sources, err := inputs.ReadValues(ctx, r, d.ValuesFrom)
	if missing := new(inputs.MissingError); errors.As(err, &missing) {
		missing.Reason = ReasonValuesMissing
		return missing
	}
	if err != nil {
		return err
	}
	dec := decrypter{r: r, cloudKMS: cloudKMS}
	if d.EncryptedValues, err = dec.decrypt(ctx, sources); err != nil {
		return err
	}
	vals, err := inputs.MergeValues(r.Namespace, sources, d.Values)
	if err != nil {
		return err
	}
	digest, err := inputs.DigestOf(vals)
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
			ref.Key = inputs.DefaultValuesKey
		}
		if err := decryptOf(field, ref); err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// decryptOf checks the decryption of the valuesFrom reference ref, at field.
func decryptOf(field string, ref v1alpha1.ValuesReference) error {
	dec := ref.Decrypt
	switch {
	case dec == nil:
		return nil
	case dec.Provider != providerSOPS:
		return invalid(field+".decrypt.provider", "is %q: set sops", dec.Provider)
	case dec.SecretRef.Name == "":
		return invalid(field+".decrypt.secretRef.name", "is required: name the Secret, in the Release's namespace, whose keys ending in %s hold the age keys", ageKeySuffix)
	case ref.TargetPath != "":
		return invalid(field+".decrypt", "reads the key as an encrypted values file, which targetPath does not: remove targetPath, or decrypt")
	}
	return nil
}

// checkSchemas refuses a chart whose values schemas refer to a schema at an http, https or file
// URL, before anything renders it: the controller makes no request and reads no file from inside
// its Pod for a tenant's chart. It refuses a schema that does not compile too, as the compiler
// could meet such a reference after the error.
func checkSchemas(ch *chartv2.Chart) error {
	err := chart.CheckSchemaRefs(ch)
	var ref *chart.SchemaRefError
	if errors.As(err, &ref) {
		return fmt.Errorf("%w: the controller fetches no schema and reads no file for a chart: put the schema it refers to in the chart's values.schema.json (under $defs), and release a new version", err)
	}
	return err
}

// refusedSchema says err is checkSchemas' refusal of a chart: nothing changes until the chart
// does.
func refusedSchema(err error) bool {
	return errors.As(err, new(*chart.SchemaRefError)) || errors.As(err, new(*chart.SchemaCompileError))
}
