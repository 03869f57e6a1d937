package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/sopsvalues"
	"github.com/berthdev/berth/internal/yamlbound"
)

// ReasonDecryptionFailed is a valuesFrom key that could not be decrypted.
const ReasonDecryptionFailed = "DecryptionFailed"

// providerSOPS is the provider of spec.valuesFrom[].decrypt.
const providerSOPS = "sops"

// ageKeySuffix ends the name of each key of a decryption Secret that holds age identities, as
// Flux's kustomize-controller names them.
const ageKeySuffix = ".agekey"

// maxAgeKeys bounds the age keys one decryption Secret gives: each is tried on every recipient.
const maxAgeKeys = 16

// DecryptionError is a valuesFrom key that could not be decrypted with the keys of its
// decryption Secret: why (Err, a *sopsvalues.Error, or what is wrong with the Secret), and the
// recipients the document was encrypted for. It never holds plaintext, nor an identity.
type DecryptionError struct {
	// Kind, Name and Key are the valuesFrom reference's; Secret the decryption Secret's name.
	Kind, Namespace, Name, Key, Secret string
	Err                                error
}

func (e *DecryptionError) Error() string {
	return fmt.Sprintf("%s/%s/%s key %s, decrypted with the age keys of Secret/%s/%s: %v", e.Kind, e.Namespace, e.Name, e.Key, e.Namespace, e.Secret, e.Err)
}

func (e *DecryptionError) Unwrap() error           { return e.Err }
func (e *DecryptionError) conditionReason() string { return ReasonDecryptionFailed }

// EncryptedNotDecryptedError is a valuesFrom key that holds a SOPS document while its
// reference asks for no decryption: read as it is, its values would be ciphertext.
type EncryptedNotDecryptedError struct {
	Kind, Namespace, Name, Key string
	Index                      int
}

func (e *EncryptedNotDecryptedError) Error() string {
	return fmt.Sprintf("%s/%s/%s key %s holds a document encrypted with SOPS: set spec.valuesFrom[%d].decrypt (provider sops, secretRef naming the Secret with its age keys), or give the key in clear", e.Kind, e.Namespace, e.Name, e.Key, e.Index)
}

func (e *EncryptedNotDecryptedError) conditionReason() string { return ReasonDecryptionFailed }

// decrypter decrypts the SOPS documents of a Release's valuesFrom with the keys of the Secrets
// they name, read once each with r.
type decrypter struct {
	r inputs.KeyReader
	// cloudKMS lets a document's cloud KMS keys be asked, with the controller's identity.
	cloudKMS bool
	keys     map[string]sopsvalues.Keys
}

// decrypt decrypts the sources that ask for it, in place, and refuses one that holds a SOPS
// document without asking. It returns the paths of the values the documents held encrypted.
func (d *decrypter) decrypt(ctx context.Context, sources []inputs.ValuesSource) ([][]string, error) {
	var paths [][]string
	for i := range sources {
		s := &sources[i]
		if s.Missing {
			continue
		}
		ref := s.Ref
		if ref.Decrypt == nil {
			if ref.TargetPath == "" && len(s.Data) <= inputs.MaxValuesDocumentBytes {
				if _, ok := sopsvalues.Detect(s.Data); ok {
					return nil, &EncryptedNotDecryptedError{Kind: ref.Kind, Namespace: d.r.Namespace, Name: ref.Name, Key: ref.Key, Index: i}
				}
			}
			continue
		}
		fail := func(err error) error {
			return &DecryptionError{Kind: ref.Kind, Namespace: d.r.Namespace, Name: ref.Name, Key: ref.Key, Secret: ref.Decrypt.SecretRef.Name, Err: err}
		}
		if len(s.Data) > inputs.MaxValuesDocumentBytes {
			// MergeValues names the limit.
			continue
		}
		if err := yamlbound.Check(s.Data, yamlbound.Tenant); err != nil {
			return nil, &inputs.ValuesError{Kind: ref.Kind, Namespace: d.r.Namespace, Name: ref.Name, Key: ref.Key, Problem: err.Error(), Err: err}
		}
		format, ok := sopsvalues.Detect(s.Data)
		if !ok {
			return nil, fail(errNotSOPS)
		}
		keys, err := d.keysOf(ctx, ref.Decrypt.SecretRef.Name)
		if missing := new(inputs.MissingError); errors.As(err, &missing) {
			return nil, err
		}
		if err != nil {
			return nil, fail(err)
		}
		plain, err := sopsvalues.Decrypt(s.Data, format, keys)
		if err != nil {
			return nil, fail(err)
		}
		for _, p := range sopsvalues.EncryptedPaths(s.Data) {
			paths = append(paths, p)
		}
		s.Data = plain
	}
	return paths, nil
}

// errNotSOPS is a key that a reference asks to decrypt and that holds no SOPS document.
var errNotSOPS = errors.New("the key holds no document encrypted with SOPS (a YAML or JSON document with its sops metadata): encrypt it with sops, or remove decrypt from the reference")

// keysOf reads the age identities of the decryption Secret name, once per reconcile: every key
// whose name ends in .agekey, each within MaxValuesDocumentBytes, at most maxAgeKeys of them.
// A Secret, or age keys, that is not there is a *inputs.MissingError; an error of another kind
// says what is wrong with the Secret's keys.
func (d *decrypter) keysOf(ctx context.Context, name string) (sopsvalues.Keys, error) {
	if k, ok := d.keys[name]; ok {
		return k, nil
	}
	s, err := d.r.Secret(ctx, name, "*"+ageKeySuffix)
	if err != nil {
		return sopsvalues.Keys{}, decryptionKeysMissing(err)
	}
	fail := func(key string, err error) error {
		return fmt.Errorf("its key %s %w", key, err)
	}
	var names []string
	for key := range s.Data {
		if strings.HasSuffix(key, ageKeySuffix) {
			names = append(names, key)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return sopsvalues.Keys{}, decryptionKeysMissing(&inputs.MissingError{Kind: "Secret", Namespace: d.r.Namespace, Name: name, Key: "*" + ageKeySuffix})
	}
	if len(names) > maxAgeKeys {
		return sopsvalues.Keys{}, fail(names[maxAgeKeys], fmt.Errorf("is one of %d keys ending in %s, more than the %d read: keep the age keys of this Release's values only", len(names), ageKeySuffix, maxAgeKeys))
	}
	identities := make([][]byte, 0, len(names))
	for _, key := range names {
		if len(s.Data[key]) > inputs.MaxValuesDocumentBytes {
			return sopsvalues.Keys{}, fail(key, fmt.Errorf("is %d bytes, more than the %d read", len(s.Data[key]), inputs.MaxValuesDocumentBytes))
		}
		identities = append(identities, s.Data[key])
	}
	keys, err := sopsvalues.AgeKeys(identities...)
	if err != nil {
		return sopsvalues.Keys{}, fail(strings.Join(names, ","), fmt.Errorf("holds no age identities (AGE-SECRET-KEY-1..., one per line, as age-keygen writes them)"))
	}
	if d.cloudKMS {
		keys = keys.WithCloudKMS()
	}
	if d.keys == nil {
		d.keys = map[string]sopsvalues.Keys{}
	}
	d.keys[name] = keys
	return keys, nil
}

// decryptionKeysMissing gives a missing decryption Secret, or one without age keys, its reason
// and what to do.
func decryptionKeysMissing(err error) error {
	if missing := new(inputs.MissingError); errors.As(err, &missing) {
		missing.Reason = ReasonDecryptionFailed
		missing.Next = fmt.Sprintf("put the age keys there, each in a key ending in %s (kubectl create secret generic %s --from-file=values%s=KEYS.txt), or fix spec.valuesFrom[].decrypt.secretRef", ageKeySuffix, missing.Name, ageKeySuffix)
		return missing
	}
	return err
}
