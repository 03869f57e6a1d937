package resource

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Parsed remembers the documents it parsed, by their text, so that an operation that reads the
// same manifest more than once (the rendered one, the recorded ones, and again to order them)
// parses each document once. Parsing YAML costs thirty times copying the object it gives. The
// zero Parsed is empty and ready; a nil *Parsed parses every time.
type Parsed struct {
	mu   sync.Mutex
	objs map[string]*unstructured.Unstructured // nil for a document that holds no object
}

// Remember records obj as what the document of text holds; obj is copied.
func (p *Parsed) Remember(text string, obj *unstructured.Unstructured) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		p.objs = map[string]*unstructured.Unstructured{}
	}
	if obj != nil {
		obj = obj.DeepCopy()
	}
	p.objs[text] = obj
}

// Len is how many documents p holds.
func (p *Parsed) Len() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.objs)
}

// Document is ParseDocument(doc), parsed once for each text: the caller owns what it returns.
func (p *Parsed) Document(doc Document) (*unstructured.Unstructured, error) {
	if p == nil {
		return ParseDocument(doc)
	}
	p.mu.Lock()
	obj, ok := p.objs[doc.Content]
	p.mu.Unlock()
	if ok {
		if obj == nil {
			return nil, nil
		}
		return obj.DeepCopy(), nil
	}
	obj, err := ParseDocument(doc)
	if err != nil {
		return nil, err
	}
	p.Remember(doc.Content, obj)
	return obj, nil
}

// Manifest is ParseManifest(manifest), each document parsed once.
func (p *Parsed) Manifest(manifest string) ([]*unstructured.Unstructured, error) {
	docs := SplitManifest(manifest)
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		obj, err := p.Document(doc)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
