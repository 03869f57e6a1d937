package release

// FootprintOf is what the record of rel takes as the store writes it, encoded as it is written:
// its record object's bytes and, when it is split, its parts', and what moved to the parts
// ("templates and files", then "manifest"). It makes no request. A record that cannot be stored
// is a *TooLargeError.
func (c *Encoder) FootprintOf(rel *Release) (RecordFootprint, []string, error) {
	e, err := c.encode(rel)
	if err != nil {
		return RecordFootprint{}, nil, err
	}
	f := RecordFootprint{Version: rel.Version, Object: Key(rel.Name, rel.Version),
		Bytes: len(e.data), Parts: len(e.parts), PartBytes: e.size() - len(e.data)}
	if rel.Info != nil {
		f.Status = rel.Info.Status
	}
	return f, e.moved, nil
}
