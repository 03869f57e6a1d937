package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
)

// TestReleaseWithAVeryLongRepositoryGetsItsCondition: a message quoting a repository URL
// longer than a condition's message may be is cut, and the status is written.
func TestReleaseWithAVeryLongRepositoryGetsItsCondition(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	repo := "http://127.0.0.1:1/" + strings.Repeat("é", 40000)
	rel := smallestRelease(t, env.Namespace, repo, "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, rel.Name, "Ready=False for its generation", func(rel *v1alpha1.Release) bool {
		cond := condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && rel.Status.ObservedGeneration == rel.Generation
	})
	msg := condition(got, controller.ConditionReady).Message
	if len(msg) > 32768 || !strings.HasSuffix(msg, "(cut)") || !strings.Contains(msg, "http://127.0.0.1:1/éé") {
		t.Errorf("Ready message of %d bytes, ending %q: want it cut under 32768 bytes, naming the repository", len(msg), msg[max(len(msg)-40, 0):])
	}
}
