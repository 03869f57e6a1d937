package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/cli/output"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/release"
)

func newGetMetadataCommand(streams Streams) *cobra.Command {
	var revision int
	var format output.Format
	cmd := &cobra.Command{
		Use:               "metadata RELEASE_NAME",
		Short:             "This command fetches metadata for a given release",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			rel, err := lookupRelease(cmd, args[0], revision)
			if err != nil {
				return err
			}
			md, err := releaseMetadata(rel)
			if err != nil {
				return err
			}
			return format.Write(streams.Out, metadataWriter{md, proofOf(rel)})
		},
	}
	cmd.Flags().IntVar(&revision, "revision", 0, "specify release revision")
	completeRevisionFlag(cmd)
	addOutputFlag(cmd, &format)
	return cmd
}

// releaseMetadata is what helm get metadata prints of a revision, in Helm's own type.
func releaseMetadata(rel *release.Release) (*action.Metadata, error) {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil, fmt.Errorf("release %s/%s revision %d: %w", rel.Namespace, rel.Name, rel.Version,
			errors.New("the record holds no chart metadata"))
	}
	acc, err := helmchart.NewAccessor(rel.Chart)
	if err != nil {
		return nil, err
	}
	m := rel.Chart.Metadata
	return &action.Metadata{
		Name:         rel.Name,
		Chart:        m.Name,
		Version:      m.Version,
		AppVersion:   m.AppVersion,
		Dependencies: acc.MetaDependencies(),
		Annotations:  m.Annotations,
		Labels:       rel.Labels,
		Namespace:    rel.Namespace,
		Revision:     rel.Version,
		Status:       rel.Info.Status.String(),
		DeployedAt:   rel.Info.LastDeployed.Format(time.RFC3339),
		ApplyMethod:  rel.ApplyMethod,
	}, nil
}

// metadataWriter prints a revision's metadata as helm get metadata does, and the proof that its
// chart was verified.
type metadataWriter struct {
	md    *action.Metadata
	proof *release.Provenance
}

// verifiedMetadata is Helm's metadata with berth's own field beside it.
type verifiedMetadata struct {
	*action.Metadata
	Verified *release.Provenance `json:"verified,omitempty"`
}

func (w metadataWriter) WriteJSON(out io.Writer) error {
	return output.EncodeJSON(out, verifiedMetadata{w.md, w.proof})
}

func (w metadataWriter) WriteYAML(out io.Writer) error {
	return output.EncodeYAML(out, verifiedMetadata{w.md, w.proof})
}

func (w metadataWriter) WriteTable(out io.Writer) error {
	md := w.md
	_, err := fmt.Fprintf(out, "NAME: %v\nCHART: %v\nVERSION: %v\nAPP_VERSION: %v\nANNOTATIONS: %v\nLABELS: %v\n"+
		"DEPENDENCIES: %v\nNAMESPACE: %v\nREVISION: %v\nSTATUS: %v\nDEPLOYED_AT: %v\nAPPLY_METHOD: %v\n",
		md.Name, md.Chart, md.Version, md.AppVersion, labels.Set(md.Annotations), labels.Set(md.Labels),
		md.FormattedDepNames(), md.Namespace, md.Revision, md.Status, md.DeployedAt, applyMethod(md.ApplyMethod))
	if err == nil && w.proof != nil {
		_, err = fmt.Fprintf(out, "VERIFIED: %s\n", describeProof(w.proof))
	}
	return err
}

// applyMethod names how a revision's objects were applied, in Helm's words.
func applyMethod(m string) string {
	switch m {
	case "":
		return "client-side apply (defaulted)"
	case string(releasev1.ApplyMethodClientSideApply):
		return "client-side apply"
	case string(releasev1.ApplyMethodServerSideApply):
		return "server-side apply"
	}
	return fmt.Sprintf("unknown (%q)", m)
}
