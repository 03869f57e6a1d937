package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// ProvenanceAnnotation is the annotation of a recorded chart's metadata that holds the proof of
// its verification (a Provenance, as JSON). Helm keeps a chart's annotations in every record it
// rewrites, and a rollback copies the chart it rolls back to, proof included.
const ProvenanceAnnotation = "berth.dev/provenance"

// VerifiedLabel is the record's label (Release.Labels) that seals the proof: its value is the
// provider and a digest of the proof and the chart it was made for. A chart's author can write
// any annotation; only the one who records a revision sets its labels. Helm carries a record's
// labels into its upgrades and rollbacks: the seal then holds only for the chart it was made
// for, so a revision of another chart is never taken as verified.
const VerifiedLabel = "berth.dev/verified"

// The providers a chart is verified with.
const (
	ProviderCosign   = "cosign"
	ProviderNotation = "notation"
	ProviderPGP      = "pgp"
)

// Provenance is the proof, kept in a revision's record, that its chart was verified before it
// was released: by which provider, of which archive or manifest, signed by whom.
type Provenance struct {
	// Provider is cosign, notation or pgp.
	Provider string `json:"provider"`
	// Reference is where the chart was read: an oci:// reference, or a repository URL and the
	// chart's name.
	Reference string `json:"reference,omitempty"`
	// Digest is what was signed: the OCI manifest's digest, or the archive's (sha256:...).
	Digest string `json:"digest,omitempty"`
	// Signer is who signed: a keyless certificate's identity, a notation certificate's subject,
	// a public key's fingerprint, or a PGP key's name and id.
	Signer string `json:"signer"`
	// Issuer is the OIDC issuer of a keyless signer's identity.
	Issuer string `json:"issuer,omitempty"`
	// LogIndex is the transparency log's entry of a keyless signature.
	LogIndex *int64 `json:"logIndex,omitempty"`
	// Verified is when berth verified it.
	Verified time.Time `json:"verified"`
}

// SetProvenance records p as the proof of rel's chart, or, with p nil, that its chart was not
// verified: a chart's own provenance annotation is removed either way, and the seal of a
// revision the labels were carried from with it. rel's labels and chart metadata are replaced
// by copies: the maps and the chart it was given are left as they were.
func SetProvenance(rel *Release, p *Provenance) error {
	if _, ok := rel.Labels[VerifiedLabel]; ok {
		rel.Labels = maps.Clone(rel.Labels)
		delete(rel.Labels, VerifiedLabel)
	}
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		if p != nil {
			return errors.New("record the chart's provenance: the revision has no chart")
		}
		return nil
	}
	_, claimed := rel.Chart.Metadata.Annotations[ProvenanceAnnotation]
	if p == nil && !claimed {
		return nil
	}
	ch, md := *rel.Chart, *rel.Chart.Metadata
	md.Annotations = maps.Clone(md.Annotations)
	delete(md.Annotations, ProvenanceAnnotation)
	ch.Metadata, rel.Chart = &md, &ch
	if p == nil {
		return nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[ProvenanceAnnotation] = string(data)
	rel.Labels = maps.Clone(rel.Labels)
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	rel.Labels[VerifiedLabel] = seal(p.Provider, data, rel.Chart)
	return nil
}

// ProvenanceOf is the proof recorded with rel's chart; nil when its chart was not verified, or
// when what the record says of it is not sealed for that chart (written by another tool, or
// carried over from another chart's revision). An error says the sealed proof cannot be read.
func ProvenanceOf(rel *Release) (*Provenance, error) {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil, nil
	}
	data, ok := rel.Chart.Metadata.Annotations[ProvenanceAnnotation]
	label := rel.Labels[VerifiedLabel]
	if !ok || label == "" {
		return nil, nil
	}
	provider, _, _ := strings.Cut(label, "-")
	if label != seal(provider, []byte(data), rel.Chart) {
		return nil, nil
	}
	var p Provenance
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return nil, fmt.Errorf("read the provenance of release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	if p.Provider != provider {
		return nil, nil
	}
	return &p, nil
}

// seal is VerifiedLabel's value for proof data of provider, made for chart ch: the provider and
// the first 160 bits of a digest of the proof, the chart's metadata without its provenance, and
// each of its templates, values and files, as the record has them. A label value holds at most
// 63 characters.
func seal(provider string, data []byte, ch *chartv2.Chart) string {
	h := sha256.New()
	write := func(b []byte) {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	write([]byte(provider))
	write(data)
	md := *ch.Metadata
	md.Annotations = maps.Clone(md.Annotations)
	delete(md.Annotations, ProvenanceAnnotation)
	mdata, _ := json.Marshal(&md) // a struct of strings, maps and slices: it always encodes
	write(mdata)
	write(recordedJSON(ch.Values))
	for _, files := range [][]*common.File{ch.Templates, ch.Files} {
		sorted := slices.Clone(files)
		slices.SortFunc(sorted, func(a, b *common.File) int { return strings.Compare(a.Name, b.Name) })
		for _, f := range sorted {
			write([]byte(f.Name))
			write(f.Data)
		}
	}
	return provider + "-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// recordedJSON is v encoded as a record holds it once read back: numbers as JSON numbers read
// into float64.
func recordedJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var back any
	if json.Unmarshal(data, &back) != nil {
		return data
	}
	data, _ = json.Marshal(back)
	return data
}
