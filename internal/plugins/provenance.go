package plugins

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"helm.sh/helm/v4/pkg/provenance"
)

// Provenance is what `helm plugin list` says of p's signature, worked out as Helm does:
// "local dev" for a plugin linked from a directory, "unsigned" without the archive and
// provenance file kept beside it, "invalid provenance" or "mismatched provenance" when the
// provenance file is no signature or signs another archive, "signed" otherwise (checked
// against no keyring), "unknown" when the plugins directory has nothing under p's name.
func (p *Plugin) Provenance() string {
	dir := filepath.Dir(p.Dir)
	fi, err := os.Lstat(filepath.Join(dir, p.Name))
	switch {
	case err != nil:
		return "unknown"
	case fi.Mode()&os.ModeSymlink != 0:
		return "local dev"
	}
	archive := filepath.Join(dir, fmt.Sprintf("%s-%s.tgz", p.Name, p.Version))
	data, err := os.ReadFile(archive)
	if err != nil {
		return "unsigned"
	}
	prov, err := os.ReadFile(archive + ".prov")
	if err != nil {
		return "unsigned"
	}
	block, _ := clearsign.Decode(prov)
	if block == nil {
		return "invalid provenance"
	}
	sums := &provenance.SumCollection{}
	if err := provenance.ParseMessageBlock(block.Plaintext, nil, sums); err != nil || len(sums.Files) == 0 {
		return "mismatched provenance"
	}
	want := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	for name, sum := range sums.Files {
		if strings.Contains(name, filepath.Base(archive)) && sum == want {
			return "signed"
		}
	}
	return "mismatched provenance"
}
