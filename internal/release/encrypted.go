package release

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// EncryptedValuesAnnotation is the annotation of a recorded chart's metadata that names the
// values of the revision that came from an encrypted values file (a JSON list of paths, each a
// list of keys), so that what shows values can mask them. berth writes it, or removes a chart's
// own, whenever it records a chart it rendered; a rollback copies the chart it goes back to, and
// with it the paths of that revision.
const EncryptedValuesAnnotation = "berth.dev/encrypted-values"

// maxEncryptedPaths bounds the paths read back from a record, and the keys of each: a record
// whose annotation holds more is read as naming none past the bound.
const maxEncryptedPaths, maxPathKeys = 10000, 64

// SetEncryptedValues records paths as the values of rel that came from an encrypted values
// file; with none, it records that none did. A chart's own annotation of that name is removed
// either way. rel's chart metadata is replaced by a copy: the chart it was given is left as it
// was.
func SetEncryptedValues(rel *Release, paths [][]string) error {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		if len(paths) > 0 {
			return fmt.Errorf("record the values from encrypted files: release %s revision %d has no chart", rel.Name, rel.Version)
		}
		return nil
	}
	_, claimed := rel.Chart.Metadata.Annotations[EncryptedValuesAnnotation]
	if len(paths) == 0 && !claimed {
		return nil
	}
	ch, md := *rel.Chart, *rel.Chart.Metadata
	md.Annotations = maps.Clone(md.Annotations)
	delete(md.Annotations, EncryptedValuesAnnotation)
	ch.Metadata, rel.Chart = &md, &ch
	if len(paths) == 0 {
		return nil
	}
	data, err := json.Marshal(SortedPaths(paths))
	if err != nil {
		return err
	}
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[EncryptedValuesAnnotation] = string(data)
	return nil
}

// EncryptedValuesOf are the paths of the values of rel that came from an encrypted values file,
// as SetEncryptedValues recorded them; none when it recorded none, or when what the record holds
// cannot be read as paths.
func EncryptedValuesOf(rel *Release) [][]string {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil
	}
	data, ok := rel.Chart.Metadata.Annotations[EncryptedValuesAnnotation]
	if !ok {
		return nil
	}
	var paths [][]string
	if err := json.Unmarshal([]byte(data), &paths); err != nil {
		return nil
	}
	if len(paths) > maxEncryptedPaths {
		paths = paths[:maxEncryptedPaths]
	}
	return SortedPaths(slices.DeleteFunc(paths, func(p []string) bool { return len(p) == 0 || len(p) > maxPathKeys }))
}

// SortedPaths are paths sorted, each once.
func SortedPaths(paths [][]string) [][]string {
	out := slices.Clone(paths)
	slices.SortFunc(out, slices.Compare[[]string])
	return slices.CompactFunc(out, slices.Equal[[]string])
}
