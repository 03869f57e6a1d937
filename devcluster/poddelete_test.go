package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestPodDeleteGuard(t *testing.T) {
	const path = "/api/v1/namespaces/ns/pods/hook"
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		live     *metav1.PartialObjectMetadata // nil: not found
		wantSent bool                          // the deletion reaches the API server
	}{
		{name: "being deleted", live: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "hook", UID: "old", DeletionTimestamp: &now}}, wantSent: true},
		{name: "a new Pod of the same name", live: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "hook", UID: "new"}}},
		{name: "gone", live: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent *metav1.DeleteOptions
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.Method {
				case http.MethodGet:
					if tc.live == nil {
						http.Error(w, `{"kind":"Status","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
						return
					}
					json.NewEncoder(w).Encode(tc.live)
				case http.MethodDelete:
					if ct := r.Header.Get("Content-Type"); ct != "application/json" {
						t.Errorf("delete sent as %s, want application/json", ct)
					}
					sent = &metav1.DeleteOptions{}
					if err := json.NewDecoder(r.Body).Decode(sent); err != nil {
						t.Errorf("delete body: %v", err)
					}
					io.WriteString(w, `{"kind":"Status","status":"Success"}`)
				}
			}))
			defer srv.Close()

			// Sent as kwok's client sends it: protobuf.
			cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}}
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return podDeleteGuard{base: rt} })
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.CoreV1().Pods("ns").Delete(context.Background(), "hook", *metav1.NewDeleteOptions(0)); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if (sent != nil) != tc.wantSent {
				t.Fatalf("deletion sent: %v, want %v", sent != nil, tc.wantSent)
			}
			if sent == nil {
				return
			}
			if sent.Preconditions == nil || sent.Preconditions.UID == nil || *sent.Preconditions.UID != tc.live.UID {
				t.Errorf("deletion preconditions %+v, want the UID %s of the Pod being deleted", sent.Preconditions, tc.live.UID)
			}
			if sent.GracePeriodSeconds == nil || *sent.GracePeriodSeconds != 0 {
				t.Errorf("deletion lost its grace period: %+v", sent)
			}
		})
	}
}
