// Package testenv runs integration tests against a local Kubernetes control plane.
//
// A test package starts one devcluster for all its tests from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// and each test gets its own namespace and clients from New:
//
//	env := testenv.New(t)
//	cm := env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`)
//
// The cluster's API server logs every request it receives; a test reads the requests made on
// its namespace since a mark:
//
//	mark := env.AuditMark(t)
//	// ... requests ...
//	for _, ev := range env.AuditEvents(t, mark) { ... }
//
// Test packages run in parallel against clusters of their own, but cluster-scoped
// objects a test creates are visible to every test of its package; keep them
// named after the test's namespace.
package testenv
