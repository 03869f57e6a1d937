package chart

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/postrenderer"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// postRenderFilename is the annotation Helm v4 puts on each document it sends to a
// post-renderer, so that the documents coming back are returned to their templates.
const postRenderFilename = "postrenderer.helm.sh/postrender-filename"

// postRender sends the rendered templates files to pr as one stream of documents, each
// annotated with its template, and returns the templates pr gave back, as Helm v4 does with its
// default ("combined") strategy: hooks and resources go together.
func postRender(pr postrenderer.PostRenderer, files map[string]string) (map[string]string, error) {
	merged, err := annotateAndMerge(files)
	if err != nil {
		return nil, fmt.Errorf("post-render: merge manifests: %w", err)
	}
	out, err := pr.Run(bytes.NewBufferString(merged))
	if err != nil {
		return nil, fmt.Errorf("post-render: %w", err)
	}
	files, err = splitAndDeannotate(out.String())
	if err != nil {
		return nil, fmt.Errorf("post-render: read what the post-renderer returned: %w", err)
	}
	return files, nil
}

// annotateAndMerge joins the documents of files (partials and empty files left out) into one
// stream, in file name order, each annotated with its file's name.
func annotateAndMerge(files map[string]string) (string, error) {
	var docs []*kyaml.RNode
	for _, name := range slices.Sorted(maps.Keys(files)) {
		content := files[name]
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		// Split as Helm's manifest sorter does, which tolerates what older charts write.
		split := releaseutil.SplitManifests(content)
		keys := slices.Collect(maps.Keys(split))
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, key := range keys {
			if strings.TrimSpace(split[key]) == "" {
				continue
			}
			nodes, err := kio.ParseAll(split[key])
			if err != nil {
				return "", fmt.Errorf("parse %s: %w", name, err)
			}
			for _, n := range nodes {
				if err := n.PipeE(kyaml.SetAnnotation(postRenderFilename, name)); err != nil {
					return "", fmt.Errorf("annotate %s: %w", name, err)
				}
				docs = append(docs, n)
			}
		}
	}
	return kio.StringAll(docs)
}

// splitAndDeannotate returns the documents of stream grouped by the file their annotation
// names, without it; a document the post-renderer added gets a file of its own.
func splitAndDeannotate(stream string) (map[string]string, error) {
	nodes, err := kio.ParseAll(stream)
	if err != nil {
		return nil, err
	}
	byFile := map[string][]*kyaml.RNode{}
	for i, n := range nodes {
		meta, err := n.GetMeta()
		if err != nil {
			return nil, err
		}
		name := meta.Annotations[postRenderFilename]
		if name == "" {
			name = fmt.Sprintf("generated-by-postrender-%d.yaml", i)
		}
		if err := n.PipeE(kyaml.ClearAnnotation(postRenderFilename)); err != nil {
			return nil, err
		}
		byFile[name] = append(byFile[name], n)
	}
	files := make(map[string]string, len(byFile))
	for name, docs := range byFile {
		s, err := kio.StringAll(docs)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		files[name] = s
	}
	return files, nil
}
