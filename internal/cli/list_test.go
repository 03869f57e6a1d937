package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// seedStatuses records, besides seedReleases' web, db and gone, a release in each pending status
// and one being uninstalled, with labels.
func seedStatuses(t *testing.T, env *testenv.Env, token string) {
	t.Helper()
	epoch := time.Date(2024, 6, 1, 8, 0, 0, 0, time.UTC)
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "queue", Version: "0.3.0", AppVersion: "7"}}
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for i, r := range []struct {
		name   string
		status release.Status
		team   string
	}{
		{"new", release.StatusPendingInstall, "red"},
		{"moving", release.StatusPendingUpgrade, "blue"},
		{"back", release.StatusPendingRollback, "red"},
		{"leaving", release.StatusUninstalling, "green"},
	} {
		rel := &release.Release{
			Name: r.name + "-" + token, Namespace: env.Namespace, Version: 1, Chart: c,
			Labels: map[string]string{"team": r.team},
			Info: &release.Info{
				FirstDeployed: epoch, LastDeployed: epoch.Add(time.Duration(-i) * time.Hour),
				Status: r.status, Description: fmt.Sprintf("%s in progress", r.status),
			},
		}
		if err := store.Create(t.Context(), rel); err != nil {
			t.Fatalf("record %s: %v", rel.Name, err)
		}
	}
}

// TestListFiltersMatchHelm runs list with each of Helm's filters, sorts and formats, with berth and
// with Helm v4, on the same records.
func TestListFiltersMatchHelm(t *testing.T) {
	env := testenv.New(t)
	token := env.Namespace[len(env.Namespace)-5:]
	seedReleases(t, env, token)
	seedStatuses(t, env, token)

	for _, args := range [][]string{
		{"list"},
		{"ls"},
		{"list", "--deployed"},
		{"list", "--failed"},
		{"list", "--pending"},
		{"list", "--superseded"},
		{"list", "--uninstalled"},
		{"list", "--uninstalling"},
		{"list", "--pending", "--uninstalling", "--deployed"},
		{"list", "--superseded", "--deployed"},
		{"list", "-f", "^(web|new)-"},
		{"list", "--filter", "(?i)^MOV"},
		{"list", "-l", "team=red"},
		{"list", "--selector", "team!=red"},
		{"list", "-l", "team==blue,owner=helm"},
		{"list", "-l", "status=uninstalling"},
		{"list", "-d"},
		{"list", "-d", "-r"},
		{"list", "-r"},
		{"list", "-m", "2"},
		{"list", "--max", "0"},
		{"list", "--offset", "2"},
		{"list", "-m", "2", "--offset", "3", "-r"},
		{"list", "--offset", "50"},
		{"list", "-q"},
		{"list", "-q", "-d", "--pending"},
		{"list", "-q", "-o", "yaml"},
		{"list", "--no-headers"},
		{"list", "--time-format", "2006-01-02 15:04:05Z0700"},
		{"list", "--time-format", "Jan 2", "-o", "json"},
		{"list", "-o", "yaml", "--pending"},
		{"list", "-A", "-f", token},
		{"list", "-A", "-f", token, "-l", "team=blue", "-o", "json"},
		{"list", "--all-namespaces", "--filter", token, "--uninstalling", "-q"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			want, err := helmIn(t, env, args...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := berthIn(t, env, args...)
			if err != nil {
				t.Fatalf("berth %s: %v", strings.Join(args, " "), err)
			}
			if got != want {
				t.Errorf("berth %s printed\n%s\nhelm printed\n%s", strings.Join(args, " "), got, want)
			}
		})
	}

	// Each filter keeps what it should (not only what Helm keeps).
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--pending"}, []string{"back", "moving", "new"}},
		{[]string{"--uninstalling"}, []string{"leaving"}},
		{[]string{"--superseded"}, []string{"web"}},
		{[]string{"-l", "team=red"}, []string{"back", "new"}},
		{[]string{"-d", "--pending"}, []string{"back", "moving", "new"}},
		{[]string{"-m", "2", "--offset", "1"}, []string{"db", "gone"}},
	} {
		got, err := berthIn(t, env, append([]string{"list", "-q"}, tt.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		for _, name := range tt.want {
			want += name + "-" + token + "\n"
		}
		if got != want {
			t.Errorf("berth list -q %s printed %q, want %q", strings.Join(tt.args, " "), got, want)
		}
	}

	for _, args := range [][]string{{"list", "-f", "(unclosed"}, {"list", "-l", "team in in"}} {
		if _, err := berthIn(t, env, args...); err == nil {
			t.Errorf("berth %s: no error", strings.Join(args, " "))
		}
	}
}
