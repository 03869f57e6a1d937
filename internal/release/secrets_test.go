package release

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
)

func TestSecretStore(t *testing.T) {
	env := testenv.New(t)
	testStore(t, NewSecretStore(env.Client.CoreV1(), env.Namespace))
}

func TestConfigMapStore(t *testing.T) {
	env := testenv.New(t)
	testStore(t, NewConfigMapStore(env.Client.CoreV1(), env.Namespace))
}

// TestSecretFormat checks the Secret a revision is kept in: Helm's name, type, labels and data key.
func TestSecretFormat(t *testing.T) {
	env := testenv.New(t)
	s := NewSecretStore(env.Client.CoreV1(), env.Namespace)
	r := rev(env.Namespace, "fmt", 3, StatusFailed)
	r.Labels = map[string]string{"team": "blue"}
	if err := s.Create(t.Context(), r); err != nil {
		t.Fatalf("Create: %v", err)
	}
	secret, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), "sh.helm.release.v1.fmt.v3", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the release Secret: %v", err)
	}
	if secret.Type != "helm.sh/release.v1" {
		t.Errorf("Secret type = %q, want helm.sh/release.v1", secret.Type)
	}
	for k, want := range map[string]string{"name": "fmt", "owner": "helm", "status": "failed", "version": "3", "team": "blue"} {
		if got := secret.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if secret.Labels["createdAt"] == "" {
		t.Error("no createdAt label")
	}
	if len(secret.Data["release"]) == 0 {
		t.Error("no release data")
	}
	if Key("fmt", 3) != secret.Name {
		t.Errorf("Key = %q, want %q", Key("fmt", 3), secret.Name)
	}
}
