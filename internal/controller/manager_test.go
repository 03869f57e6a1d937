package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/berthdev/berth/api/v1alpha1"
)

func TestDeletingPassesOnlyTheMarkForDeletion(t *testing.T) {
	now := metav1.Now()
	live := &v1alpha1.Release{}
	deleted := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}
	tests := []struct {
		name     string
		old, new *v1alpha1.Release
		want     bool
	}{
		{"marked for deletion", live, deleted, true},
		{"status written while deleting", deleted, deleted, false},
		{"an update of a live object", live, live, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (deleting{}).Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
}
