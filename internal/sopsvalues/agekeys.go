package sopsvalues

import (
	"context"
	"errors"
	"fmt"
	"slices"

	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"
)

// AgeKeys are keys that decrypt with the age identities given (AGE-SECRET-KEY-1..., one per line,
// "#" comments allowed) and nothing else: no key of the environment, no PGP, no cloud KMS. Their
// error names no identity.
func AgeKeys(identities ...[]byte) (Keys, error) {
	var ids sopsage.ParsedIdentities
	for i, text := range identities {
		if err := ids.Import(string(text)); err != nil {
			// The parser's error may quote the line it could not read: a secret key.
			return Keys{}, fmt.Errorf("age identities %d: not age identities (AGE-SECRET-KEY-1..., one per line)", i+1)
		}
	}
	return Keys{Services: []keyservice.KeyServiceClient{ageOnly{ids: ids}}, ageOnly: true}, nil
}

// WithCloudKMS are k and the cloud KMS keys of the process's own cloud identity (AWS KMS, GCP
// KMS, Azure Key Vault, HashiCorp Vault transit, Huawei Cloud KMS), found as the sops CLI finds their credentials:
// still no age key of the environment and no PGP.
func (k Keys) WithCloudKMS() Keys {
	k.Services = append(slices.Clip(k.Services), cloudOnly{local: keyservice.NewLocalClient()})
	k.cloudKMS = true
	return k
}

// cloudOnly is a key service that decrypts a data key with cloud KMS keys only.
type cloudOnly struct{ local keyservice.KeyServiceClient }

func (c cloudOnly) Decrypt(ctx context.Context, req *keyservice.DecryptRequest, opts ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	if !isCloud(req.GetKey()) {
		return nil, fmt.Errorf("%s: not a cloud KMS key", keyKind(req.GetKey()))
	}
	return c.local.Decrypt(ctx, req, opts...)
}

func (cloudOnly) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encrypting is not what berth does")
}

// isCloud reports whether k is a key of a cloud KMS (or Vault's transit engine).
func isCloud(k *keyservice.Key) bool {
	switch k.GetKeyType().(type) {
	case *keyservice.Key_KmsKey, *keyservice.Key_GcpKmsKey, *keyservice.Key_AzureKeyvaultKey, *keyservice.Key_VaultKey, *keyservice.Key_HckmsKey:
		return true
	}
	return false
}

// ageOnly is a key service that decrypts a data key with its age identities only.
type ageOnly struct{ ids sopsage.ParsedIdentities }

func (a ageOnly) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	k, ok := req.GetKey().GetKeyType().(*keyservice.Key_AgeKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an age key", keyKind(req.GetKey()))
	}
	if len(a.ids) == 0 {
		return nil, errors.New("no age identity given")
	}
	mk := &sopsage.MasterKey{Recipient: k.AgeKey.GetRecipient(), EncryptedKey: string(req.GetCiphertext())}
	a.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, fmt.Errorf("no age identity given decrypts the data key of %s", mk.Recipient)
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (ageOnly) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encrypting is not what berth does")
}

// keyKind names the kind of a key service key, for a refusal.
func keyKind(k *keyservice.Key) string {
	switch k.GetKeyType().(type) {
	case *keyservice.Key_PgpKey:
		return "PGP key " + k.GetPgpKey().GetFingerprint()
	case *keyservice.Key_KmsKey:
		return "AWS KMS key " + k.GetKmsKey().GetArn()
	case *keyservice.Key_GcpKmsKey:
		return "GCP KMS key " + k.GetGcpKmsKey().GetResourceId()
	case *keyservice.Key_AzureKeyvaultKey:
		return "Azure Key Vault key " + k.GetAzureKeyvaultKey().GetName()
	case *keyservice.Key_VaultKey:
		return "Vault transit key " + k.GetVaultKey().GetKeyName()
	case *keyservice.Key_HckmsKey:
		return "Huawei Cloud KMS key " + k.GetHckmsKey().GetKeyId()
	}
	return "a key of another kind"
}
