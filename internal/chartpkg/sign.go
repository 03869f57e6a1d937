package chartpkg

import (
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/provenance"
	"sigs.k8s.io/yaml"
)

// Signing says how to sign a packaged chart: Helm's --key, --keyring and passphrase.
type Signing struct {
	// Key names the private key in Keyring: its identity, or a part of it that only one key has.
	Key string
	// Keyring is the file of the private keys (GnuPG's secret keyring, or an armored export).
	Keyring string
	// Passphrase returns the passphrase of an encrypted key, given the key's name. It is not
	// called for a key without one.
	Passphrase provenance.PassphraseFetcher
}

type signer struct{ s *provenance.Signatory }

// load reads the private key and decrypts it, before anything is packaged.
func (o *Signing) load() (*signer, error) {
	s, err := provenance.NewFromKeyring(o.Keyring, o.Key)
	switch {
	case s == nil:
		return nil, &Error{Kind: KindNoKeyring, Path: o.Keyring, Name: o.Key, Err: err}
	case err != nil: // more than one key has the name
		return nil, &Error{Kind: KindNoKey, Path: o.Keyring, Name: o.Key, Err: err}
	}
	if s.Entity == nil {
		return nil, &Error{Kind: KindNoKey, Path: o.Keyring, Name: o.Key}
	}
	if s.Entity.PrivateKey == nil {
		return nil, &Error{Kind: KindNoKey, Path: o.Keyring, Name: o.Key,
			Err: fmt.Errorf("the keyring holds its public key only: give a keyring with secret keys")}
	}
	passphrase := o.Passphrase
	if passphrase == nil {
		passphrase = func(string) ([]byte, error) {
			return nil, fmt.Errorf("the key is encrypted, and no passphrase was given")
		}
	}
	if err := s.DecryptKey(passphrase); err != nil {
		return nil, fmt.Errorf("decrypt signing key %q: %w", o.Key, err)
	}
	return &signer{s: s}, nil
}

// sign writes the provenance file of the chart archive at path beside it, as helm package --sign
// does: the chart's metadata and the archive's digest, clear-signed.
func (s *signer) sign(path string) error {
	ch, err := loader.LoadFile(path)
	if err != nil {
		return fmt.Errorf("load chart for signing: %w", err)
	}
	meta, err := yaml.Marshal(ch.Metadata)
	if err != nil {
		return fmt.Errorf("marshal chart metadata: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sig, err := s.s.ClearSign(data, filepath.Base(path), meta)
	if err != nil {
		return fmt.Errorf("sign %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path+".prov", []byte(sig), 0o644)
}
