package provenance

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/notaryproject/notation-go/verifier/truststore"
)

// maxTrustStoreFiles bounds how many certificate files a trust store may hold.
const maxTrustStoreFiles = 256

var storeName = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// missingStoreError: a trust policy statement names a trust store the options do not hold.
type missingStoreError struct {
	Type, Store string
}

func (e *missingStoreError) Error() string {
	return fmt.Sprintf("names the trust store %s:%s, which holds no certificate; add its certificates under truststore/x509/%s/%s/", e.Type, e.Store, e.Type, e.Store)
}

// memoryTrustStore is notation's truststore.X509TrustStore over certificates held in memory.
type memoryTrustStore struct {
	certs map[string][]*x509.Certificate // by "<type>:<store>"
}

var _ truststore.X509TrustStore = (*memoryTrustStore)(nil)

// newMemoryTrustStore parses and checks every certificate file as notation does when it reads its
// trust store: a store type it knows, a valid store name, CA or self-signed certificates, root CAs
// for tsa stores.
func newMemoryTrustStore(files []NotationCertificate, lim Limits) (*memoryTrustStore, error) {
	if len(files) > maxTrustStoreFiles {
		return nil, &BoundsError{What: fmt.Sprintf("the trust store (%d files)", len(files)), Limit: maxTrustStoreFiles}
	}
	s := &memoryTrustStore{certs: map[string][]*x509.Certificate{}}
	for _, f := range files {
		name := fmt.Sprintf("truststore/x509/%s/%s/%s", f.Type, f.Store, f.Name)
		if !validStoreType(f.Type) {
			return nil, fmt.Errorf("%s: store type %q is not one of ca, signingAuthority, tsa", name, f.Type)
		}
		if !storeName.MatchString(f.Store) {
			return nil, fmt.Errorf("%s: store name must match [a-zA-Z0-9_.-]+", name)
		}
		if int64(len(f.Data)) > lim.MaxMaterialBytes {
			return nil, &BoundsError{What: "certificate file " + name, Limit: lim.MaxMaterialBytes}
		}
		certs, err := ParseTrustStoreCert(f.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := truststore.ValidateCertificates(certs); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if f.Type == string(truststore.TypeTSA) {
			for _, c := range certs {
				if !c.IsCA || c.CheckSignatureFrom(c) != nil {
					return nil, fmt.Errorf("%s: a tsa store holds root CA certificates only", name)
				}
			}
		}
		key := f.Type + ":" + f.Store
		s.certs[key] = append(s.certs[key], certs...)
	}
	return s, nil
}

func validStoreType(t string) bool {
	for _, known := range truststore.Types {
		if t == string(known) {
			return true
		}
	}
	return false
}

// GetCertificates returns the certificates of a named store.
func (s *memoryTrustStore) GetCertificates(_ context.Context, t truststore.Type, store string) ([]*x509.Certificate, error) {
	certs := s.certs[string(t)+":"+store]
	if len(certs) == 0 {
		return nil, &missingStoreError{Type: string(t), Store: store}
	}
	return append([]*x509.Certificate(nil), certs...), nil
}

// ParseTrustStoreCert parses a trust store file: one or more PEM certificates, or DER.
func ParseTrustStoreCert(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	block, rest := pem.Decode(data)
	if block == nil {
		der, err := x509.ParseCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = der
	}
	for ; block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("parse certificate: unexpected PEM block %q", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("parse certificate: no certificate")
	}
	return certs, nil
}

// ConfigError is returned by LoadNotationDir: which file of the configuration directory, why.
type ConfigError struct {
	Path   string
	Reason Reason // ReasonInvalidOptions or ReasonBoundsExceeded
	Err    error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("notation configuration %s: %s: %v", e.Path, e.Reason, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// DefaultNotationDir is the directory notation reads its configuration from: $NOTATION_CONFIG when
// set, else notation under the user's configuration directory ($XDG_CONFIG_HOME or ~/.config on
// Linux).
func DefaultNotationDir() (string, error) {
	if d := os.Getenv("NOTATION_CONFIG"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("notation configuration directory: %w", err)
	}
	return filepath.Join(d, "notation"), nil
}

// LoadNotationDir reads the files `notation verify` uses from its configuration directory: the
// trust policy (trustpolicy.oci.json, else trustpolicy.json) and the trust store
// (truststore/x509/<type>/<store>/*). Each file is bounded by lim.MaxMaterialBytes; symbolic links
// and directories where notation expects files are refused, as notation does.
func LoadNotationDir(dir string, lim Limits) (*NotationOptions, error) {
	lim = lim.withDefaults()
	o := &NotationOptions{}
	var err error
	for _, name := range []string{"trustpolicy.oci.json", "trustpolicy.json"} {
		o.TrustPolicy, err = readBounded(filepath.Join(dir, name), lim.MaxMaterialBytes)
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = errors.New("neither trustpolicy.oci.json nor trustpolicy.json exists; import one with notation policy import")
	}
	if err != nil {
		return nil, configError(filepath.Join(dir, "trustpolicy.oci.json"), err)
	}
	for _, t := range truststore.Types {
		typeDir := filepath.Join(dir, "truststore", "x509", string(t))
		stores, err := os.ReadDir(typeDir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, configError(typeDir, err)
		}
		for _, store := range stores {
			if err := loadStore(o, filepath.Join(typeDir, store.Name()), string(t), store, lim); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

func loadStore(o *NotationOptions, path, storeType string, store fs.DirEntry, lim Limits) error {
	if !store.IsDir() {
		return configError(path, errors.New("a trust store must be a directory"))
	}
	files, err := os.ReadDir(path)
	if err != nil {
		return configError(path, err)
	}
	for _, f := range files {
		p := filepath.Join(path, f.Name())
		if len(o.Certificates) == maxTrustStoreFiles {
			return configError(p, &BoundsError{What: "the trust store's files", Limit: maxTrustStoreFiles})
		}
		data, err := readBounded(p, lim.MaxMaterialBytes)
		if err != nil {
			return configError(p, err)
		}
		o.Certificates = append(o.Certificates, NotationCertificate{Type: storeType, Store: store.Name(), Name: f.Name(), Data: data})
	}
	return nil
}

// readBounded reads a regular file (not a symbolic link) of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file (symbolic links and directories are refused)")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &BoundsError{What: "the file", Limit: limit}
	}
	return data, nil
}

func configError(path string, err error) *ConfigError {
	var be *BoundsError
	if errors.As(err, &be) {
		return &ConfigError{Path: path, Reason: ReasonBoundsExceeded, Err: err}
	}
	return &ConfigError{Path: path, Reason: ReasonInvalidOptions, Err: err}
}
