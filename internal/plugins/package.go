package plugins

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"helm.sh/helm/v4/pkg/provenance"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/atomicfile"
)

// ErrNotDirectory is a plugin to package that is a file (an archive, say), not a directory.
var ErrNotDirectory = errors.New("plugin package only supports directories, not tarballs")

// Signing says how to sign a plugin archive: Helm's --key, --keyring and passphrase.
type Signing struct {
	// Key names the private key in Keyring: its identity, or a part of it only one key has.
	Key string
	// Keyring is the file of the private keys (GnuPG's secret keyring, or an armored export).
	Keyring string
	// Passphrase returns the passphrase of an encrypted key, given the key's name.
	Passphrase provenance.PassphraseFetcher
}

// KeyError is a signing key that could not be read from its keyring or decrypted.
type KeyError struct {
	Keyring, Key string
	Err          error
}

func (e *KeyError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("signing key from keyring %s: %v", e.Keyring, e.Err)
	}
	return fmt.Sprintf("signing key %q from keyring %s: %v", e.Key, e.Keyring, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// PackageOptions say which plugin directory to package, where to, and how to sign it.
type PackageOptions struct {
	Dir         string
	Destination string
	// Signing, when set, signs the archive into a provenance file beside it.
	Signing *Signing
}

// Packaged is what Package wrote: DEST/NAME-VERSION.tgz, and its .prov when signed.
type Packaged struct {
	Plugin     *Plugin
	Archive    string
	Provenance string
}

// Package writes the plugin directory opts.Dir as Helm's plugin package does: a .tgz whose top
// directory is the plugin's name and, with Signing, its provenance file (the plugin's metadata
// and the archive's digest, clear-signed). The plugin is loaded, the key read and decrypted
// and the archive built before anything is written: a failure writes nothing.
func Package(opts PackageOptions) (*Packaged, error) {
	fi, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, ErrNotDirectory
	}
	p, err := loadStaged(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("invalid plugin directory: %w", err)
	}
	var signer *provenance.Signatory
	if opts.Signing != nil {
		if signer, err = opts.Signing.load(); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := writeTarball(&buf, opts.Dir, p.Name); err != nil {
		return nil, fmt.Errorf("failed to create plugin tarball: %w", err)
	}
	data := buf.Bytes()
	name := fmt.Sprintf("%s-%s.tgz", p.Name, p.Version)
	var prov []byte
	if signer != nil {
		meta, err := provenanceMetadata(opts.Dir, p.Metadata)
		if err != nil {
			return nil, err
		}
		sig, err := signer.ClearSign(data, name, meta)
		if err != nil {
			return nil, fmt.Errorf("failed to sign plugin: %w", err)
		}
		prov = []byte(sig)
	}
	return writePackage(opts.Destination, name, data, prov, p)
}

// load reads the private key and decrypts it.
func (s *Signing) load() (*provenance.Signatory, error) {
	signer, err := provenance.NewFromKeyring(s.Keyring, s.Key)
	if err != nil {
		return nil, &KeyError{Keyring: s.Keyring, Key: s.Key, Err: err}
	}
	passphrase := s.Passphrase
	if passphrase == nil {
		passphrase = func(string) ([]byte, error) {
			return nil, errors.New("the key is encrypted, and no passphrase was given")
		}
	}
	if err := signer.DecryptKey(passphrase); err != nil {
		return nil, &KeyError{Keyring: s.Keyring, Key: s.Key, Err: err}
	}
	return signer, nil
}

// writePackage writes the archive and its provenance file into dest, each through a temporary
// file renamed into place; when one fails, neither is left.
func writePackage(dest, name string, data, prov []byte, p *Plugin) (*Packaged, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	out := &Packaged{Plugin: p, Archive: filepath.Join(dest, name)}
	if err := atomicfile.Write(out.Archive, data, 0o644); err != nil {
		return nil, err
	}
	if prov != nil {
		out.Provenance = out.Archive + ".prov"
		if err := atomicfile.Write(out.Provenance, prov, 0o644); err != nil {
			os.Remove(out.Archive)
			return nil, err
		}
	}
	return out, nil
}

// writeTarball writes the directories and regular files under dir into w as a .tgz under the
// top directory name, as Helm's plugin package does. A symbolic link or other special file is
// refused: Helm's installers do not extract them.
func writeTarball(w io.Writer, dir, name string) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.IsDir() && !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file or directory: a plugin archive holds only those", p)
		}
		if total += info.Size(); total > maxArchiveBytes {
			return fmt.Errorf("%s holds more than %d bytes", dir, maxArchiveBytes)
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = path.Join(name, filepath.ToSlash(rel))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		return copyFile(tw, p)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// provenanceMetadata is the metadata a plugin's provenance file holds: the fields of Helm's
// plugin metadata, with the config and runtimeConfig of plugin.yaml as written.
func provenanceMetadata(dir string, m Metadata) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("plugin.yaml: %w", err)
	}
	return yaml.Marshal(struct {
		APIVersion, Name, Type, Runtime, Version, SourceURL string
		Config, RuntimeConfig                               any
	}{m.APIVersion, m.Name, m.Type, m.Runtime, m.Version, m.SourceURL, raw["config"], raw["runtimeConfig"]})
}
