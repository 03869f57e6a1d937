package berthtest

import (
	"testing"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// AgeKey is an age key pair a test made: Identity (AGE-SECRET-KEY-1...) decrypts what is
// encrypted for Recipient (age1...).
type AgeKey struct {
	Identity, Recipient string
}

// NewAgeKey makes a new age key pair.
func NewAgeKey(t testing.TB) AgeKey {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return AgeKey{Identity: id.String(), Recipient: id.Recipient().String()}
}

// EncryptSOPS encrypts the values document plain (YAML, or JSON when json is true) for the age
// recipients, as `sops encrypt --age` does with SOPS's library: every value encrypted, the data
// key encrypted for each recipient, and the MAC over the values.
func EncryptSOPS(t testing.TB, plain []byte, json bool, recipients ...string) []byte {
	t.Helper()
	var store sops.Store = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if json {
		store = sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, keys.MasterKey(k))
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{KeyGroups: []sops.KeyGroup{group}, UnencryptedSuffix: "_unencrypted", Version: "3.13.3"}}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		t.Fatalf("encrypt the data key: %v", errs)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		t.Fatal(err)
	}
	tree.Metadata.LastModified = time.Now().UTC()
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
