package lifecycle

import (
	"encoding/base64"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// lookupChart keeps a generated password across upgrades through lookup, as grafana's chart and
// many operators' webhook certificates do: the password is made once and read back after.
var lookupChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: keeper\nversion: 0.1.0\n",
	"values.yaml": "replicas: 1\n",
	"templates/secret.yaml": `{{- $old := lookup "v1" "Secret" .Release.Namespace "keeper-password" }}
apiVersion: v1
kind: Secret
metadata:
  name: keeper-password
data:
  {{- if $old }}
  password: {{ index $old.data "password" }}
  {{- else }}
  password: {{ randAlphaNum 24 | b64enc }}
  {{- end }}
`,
	"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: keeper-config
data:
  replicas: {{ .Values.replicas | quote }}
`,
}

func TestLookupSeesTheClusterOnInstallAndUpgrade(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "keeper", lookupChart)
	password := func() string {
		t.Helper()
		s, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), "keeper-password", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get the password Secret: %v", err)
		}
		return string(s.Data["password"])
	}

	berthtest.MustBerth(t, env, "install", "keeper", chart)
	first := password()
	if len(first) != 24 {
		t.Fatalf("installed password %q, want 24 random characters", first)
	}
	for i, replicas := range []string{"2", "3"} {
		berthtest.MustBerth(t, env, "upgrade", "keeper", chart, "--set", "replicas="+replicas)
		if got := password(); got != first {
			t.Errorf("upgrade %d changed the password from %q to %q: lookup did not see the cluster", i+1, first, got)
		}
	}
	// A server dry run reads the cluster too, so it shows the password that is there.
	stdout, _ := berthtest.MustBerth(t, env, "upgrade", "keeper", chart, "--dry-run=server", "-o", "json")
	if want := "password: " + base64.StdEncoding.EncodeToString([]byte(first)); !strings.Contains(stdout, want) {
		t.Errorf("upgrade --dry-run=server does not render the password in the cluster (%q):\n%s", want, stdout)
	}

	// template reads no cluster: lookup finds nothing and a new password is made, as helm
	// template does.
	out, _, err := berthtest.RunBerth(t, "template", "keeper", chart)
	if err != nil {
		t.Fatalf("berth template: %v", err)
	}
	if !strings.Contains(out, "name: keeper-password") {
		t.Errorf("berth template printed no Secret:\n%s", out)
	}
}
