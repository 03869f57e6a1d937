package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
					sent = &metav1.DeleteOptions{}
					if err := json.NewDecoder(r.Body).Decode(sent); err != nil {
						t.Errorf("delete body: %v", err)
					}
					io.WriteString(w, `{"kind":"Status","status":"Success"}`)
				}
			}))
			defer srv.Close()

			c := http.Client{Transport: podDeleteGuard{base: http.DefaultTransport}}
			req, _ := http.NewRequest(http.MethodDelete, srv.URL+path, strings.NewReader(`{"gracePeriodSeconds":0}`))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d, want 200", resp.StatusCode)
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
