package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCustomResourcesOfNewCRDsAreValidatedBeforeAnyIsApplied installs a chart whose crds/ defines
// a kind and whose templates hold a valid and an invalid object of it. The kind does not exist
// before the install, so the objects cannot be validated with the rest; berth validates them once
// the CRD is Established and applies neither.
func TestCustomResourcesOfNewCRDsAreValidatedBeforeAnyIsApplied(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "late-" + berthtest.Suffix(env) + ".example.com"
	t.Cleanup(func() { deleteCRDs(t, env, "shirts."+group) })
	shirt := func(name, color string) string {
		return fmt.Sprintf("apiVersion: %s/v1\nkind: Shirt\nmetadata:\n  name: %s\nspec:\n  color: %s\n", group, name, color)
	}
	chart := berthtest.WriteChart(t, "late", map[string]string{
		"crds/shirt.yaml":       fmt.Sprintf(shirtCRD, group),
		"templates/good.yaml":   goodTemplate,
		"templates/shirts.yaml": shirt("fine", "blue") + "---\n" + shirt("broken", "42"),
	})

	_, _, err := berthtest.Berth(t, env, "install", "late", chart, "--wait")
	if err == nil {
		t.Fatal("install succeeded, want the invalid Shirt refused")
	}
	for _, want := range []string{"validation of the custom resources failed", "Shirt." + group + "/" + env.Namespace + "/broken", "color"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	berthtest.AssertNoObject(t, env, group+"/v1", "Shirt", "fine", "broken")
}
