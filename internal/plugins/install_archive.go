package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/provenance"
)

// installArchive installs the plugin archive opts.Source (a file or a URL): checked against its
// provenance file with Verify, extracted into a staging directory of opts.Dir, moved into place,
// and kept beside the plugins as NAME-VERSION.tgz (with its .prov) as Helm keeps it.
func installArchive(ctx context.Context, opts InstallOptions, kind SourceKind) (*Plugin, *provenance.Verification, error) {
	read := readFile
	if kind == SourceURL {
		read = func(src string) ([]byte, error) { return download(ctx, opts.Client, src) }
	}
	data, err := read(opts.Source)
	if err != nil {
		return nil, nil, err
	}
	prov, provErr := read(opts.Source + ".prov")
	var v *provenance.Verification
	if opts.Verify {
		if provErr != nil {
			return nil, nil, fmt.Errorf("plugin verification failed: no provenance file (.prov) found: %w", provErr)
		}
		if v, err = verify(data, prov, filepath.Base(opts.Source), opts.Keyring); err != nil {
			return nil, nil, err
		}
	}
	if provErr != nil {
		prov = nil
	}
	p, err := unpack(opts, data, prov, archiveName(filepath.Base(opts.Source)))
	return p, v, err
}

// unpack extracts the plugin archive data into a staging directory of opts.Dir, moves it into
// place as name, and keeps the archive beside the plugins as NAME-VERSION.tgz, with its
// provenance file prov unless that is nil, as Helm keeps them.
func unpack(opts InstallOptions, data, prov []byte, name string) (*Plugin, error) {
	staging, err := os.MkdirTemp(opts.Dir, ".install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	if err := extract(data, staging); err != nil {
		return nil, fmt.Errorf("extract %s: %w", opts.Source, err)
	}
	root, err := pluginRoot(staging)
	if err != nil {
		return nil, err
	}
	p, err := stage(root, opts.Dir, name)
	if err != nil {
		return nil, err
	}
	keep := filepath.Join(opts.Dir, fmt.Sprintf("%s-%s.tgz", p.Name, p.Version))
	if err := os.WriteFile(keep, data, 0o644); err == nil && prov != nil {
		_ = os.WriteFile(keep+".prov", prov, 0o644)
	}
	return p, nil
}

// verify checks the archive data against its provenance file prov and the keyring.
func verify(data, prov []byte, name, keyring string) (*provenance.Verification, error) {
	sig, err := provenance.NewFromKeyring(keyring, "")
	if err != nil {
		return nil, fmt.Errorf("plugin verification failed: keyring %s: %w", keyring, err)
	}
	v, err := sig.Verify(data, prov, name)
	if err != nil {
		return nil, fmt.Errorf("plugin verification failed: %w", err)
	}
	return v, nil
}

func readFile(p string) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxArchiveBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxArchiveBytes)
	}
	return os.ReadFile(p)
}

// download fetches u with client within ctx, up to maxArchiveBytes.
func download(ctx context.Context, client *http.Client, u string) ([]byte, error) {
	if client == nil {
		return nil, errors.New("no HTTP client to download with")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxArchiveBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u, err)
	}
	if len(data) > maxArchiveBytes {
		return nil, fmt.Errorf("fetch %s: larger than %d bytes", u, maxArchiveBytes)
	}
	return data, nil
}
