package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/berthdev/berth/internal/release"
)

// operations are the API operations a release operation makes.
var operations = map[release.Operation][]admissionv1.OperationType{
	release.OpInstall:   {admissionv1.Create, admissionv1.Update},
	release.OpUpgrade:   {admissionv1.Create, admissionv1.Update, admissionv1.Delete},
	release.OpRollback:  {admissionv1.Create, admissionv1.Update, admissionv1.Delete},
	release.OpUninstall: {admissionv1.Delete},
}

// Preflight runs the checks that can block operation op on a release in namespace before it
// starts: admission webhooks that intercept what op does there and cannot answer, APIServices
// that are not Available (discovery fails) and the namespace itself Terminating. It returns the
// blockers found, nil when there are none. CRDs' conversion webhooks are left to berth doctor:
// reading every CRD on every operation costs more than it finds.
func Preflight(ctx context.Context, c Cluster, op release.Operation, namespace, name string) *PreflightError {
	r := &run{Cluster: c, opts: Options{Namespace: namespace, Release: name, operations: operations[op]}}
	r.Now = c.Now
	if r.Now == nil {
		r.Now = time.Now
	}
	r.webhooks(ctx)
	r.apiServices(ctx)
	r.namespaces(ctx)
	rep := Report{Scope: r.opts.scope(), Findings: slices.DeleteFunc(r.findings, func(f Finding) bool { return f.Severity != Blocker })}
	if len(rep.Findings) == 0 {
		return nil
	}
	rep.sort()
	return &PreflightError{Operation: op, Release: name, Namespace: namespace, Findings: rep.Findings}
}

// PreflightError is what stopped an operation before it began: the blockers its preflight found.
type PreflightError struct {
	Operation release.Operation
	Release   string
	Namespace string
	Findings  []Finding
}

func (e *PreflightError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of release %s in namespace %s would be blocked; nothing was changed:", e.Operation, e.Release, e.Namespace)
	for _, f := range e.Findings {
		fmt.Fprintf(&b, "\n  %s: %s\n    breaks: %s\n    fix: %s", f.Object, f.Problem, f.Breaks, f.Fix)
	}
	return b.String()
}
