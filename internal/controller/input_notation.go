package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/provenance"
)

// providerNotation is the notation provider of spec.chart.verify.
const providerNotation = "notation"

// The keys of a notation Secret that may hold its trust policy, as notation names the file: the
// first present is used.
var notationPolicyKeys = []string{"trustpolicy.oci.json", "trustpolicy.json"}

// notationStoreTypes are the trust store types of notation, the first part of a trust store key.
var notationStoreTypes = []string{"ca", "signingAuthority", "tsa"}

// readNotation reads, with r, the trust policy and trust store the notation Secret name holds,
// each key within provenance's limit of a piece of material: the policy in trustpolicy.oci.json
// (or trustpolicy.json), the store in the keys named TYPE.STORE.FILE. The trust policy is parsed
// when the chart is verified, whose error names the Secret.
func readNotation(ctx context.Context, r inputs.KeyReader, name string) (*provenance.NotationOptions, error) {
	const field = "chart.verify.notation"
	s, err := r.Secret(ctx, name, notationPolicyKeys[0])
	if err != nil {
		return nil, credentialsMissing(err, field)
	}
	fail := func(key string, err error) error {
		return &ChartAccessError{Namespace: r.Namespace, Name: name, Key: key, Field: field, Err: err}
	}
	limit := provenance.DefaultLimits().MaxMaterialBytes
	o := &provenance.NotationOptions{}
	for _, key := range notationPolicyKeys {
		if data, ok := s.Data[key]; ok {
			if int64(len(data)) > limit {
				return nil, fail(key, &provenance.BoundsError{What: fmt.Sprintf("its %d bytes", len(data)), Limit: limit})
			}
			o.TrustPolicy = data
			break
		}
	}
	if o.TrustPolicy == nil {
		return nil, credentialsMissing(&inputs.MissingError{Kind: "Secret", Namespace: r.Namespace, Name: name, Key: notationPolicyKeys[0]}, field)
	}
	keys := make([]string, 0, len(s.Data))
	for key := range s.Data {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		typ, rest, ok := strings.Cut(key, ".")
		store, file, ok2 := strings.Cut(rest, ".")
		if !ok || !ok2 || !slices.Contains(notationStoreTypes, typ) {
			continue
		}
		data := s.Data[key]
		if int64(len(data)) > limit {
			return nil, fail(key, &provenance.BoundsError{What: fmt.Sprintf("its %d bytes", len(data)), Limit: limit})
		}
		if _, err := provenance.ParseTrustStoreCert(data); err != nil {
			return nil, fail(key, errors.New("holds no certificate (PEM or DER), as a file of notation's trust store would"))
		}
		o.Certificates = append(o.Certificates, provenance.NotationCertificate{Type: typ, Store: store, Name: file, Data: data})
	}
	if len(o.Certificates) == 0 {
		return nil, fail(notationPolicyKeys[0], errors.New("holds a trust policy but no trust store: add the certificates as keys named TYPE.STORE.FILE, such as ca.release.root.crt"))
	}
	return o, nil
}
