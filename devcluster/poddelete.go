package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// podPath matches the path of one Pod, without a subresource.
var podPath = regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods/[^/]+$`)

// podDeleteGuard makes the simulated kubelet's deletion of a Pod the deletion of the Pod that is
// being deleted, by its UID, as a kubelet's is. kwok deletes by name: a deletion it decided for a
// Pod that is gone since would delete a new Pod of the same name (a hook Job's or test Pod's,
// created again by the next operation) that nobody asked to delete.
type podDeleteGuard struct{ base http.RoundTripper }

func (g podDeleteGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodDelete || !podPath.MatchString(req.URL.Path) {
		return g.base.RoundTrip(req)
	}
	get := req.Clone(req.Context())
	get.Method, get.Body, get.ContentLength, get.GetBody = http.MethodGet, nil, 0, nil
	get.Header.Set("Accept", "application/json")
	get.Header.Del("Content-Type")
	resp, err := g.base.RoundTrip(get)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return deleted(req), nil // the Pod meant is gone already
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	var live metav1.PartialObjectMetadata
	if err := json.Unmarshal(body, &live); err != nil {
		return nil, err
	}
	if live.DeletionTimestamp == nil {
		// A Pod that is not being deleted is a new one of the same name: the Pod meant is gone.
		return deleted(req), nil
	}
	var opts metav1.DeleteOptions
	if req.Body != nil {
		raw, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			// JSON or protobuf, as the client's content type has it.
			if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, &opts); err != nil {
				return nil, fmt.Errorf("read the options of a Pod's deletion: %w", err)
			}
		}
	}
	uid := live.UID
	opts.Preconditions = &metav1.Preconditions{UID: &uid}
	opts.APIVersion, opts.Kind = "meta.k8s.io/v1", "DeleteOptions"
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	del := req.Clone(req.Context())
	del.Body, del.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	del.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	del.Header.Set("Content-Type", "application/json")
	return g.base.RoundTrip(del)
}

// deleted is the answer to a deletion that had nothing left to delete.
func deleted(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}`
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
