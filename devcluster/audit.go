package main

import (
	"os"
	"path/filepath"
)

// auditPolicy records every request once, when its response is complete (or the handler
// panicked), at level Metadata: who (user, userAgent), what (verb, objectRef), when
// (requestReceivedTimestamp, stageTimestamp) and the response code, but no bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
- RequestReceived
- ResponseStarted
rules:
- level: Metadata
`

// writeAuditPolicy writes auditPolicy to root/audit-policy.yaml and returns its path.
func writeAuditPolicy(root string) (string, error) {
	path := filepath.Join(root, "audit-policy.yaml")
	if err := os.WriteFile(path, []byte(auditPolicy), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// auditArgs makes kube-apiserver append one JSON line per event to logPath, written before
// the request completes, never rotated or truncated.
func auditArgs(policy, logPath string) []string {
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		// 0 turns rotation off: the file is only appended to.
		"--audit-log-maxsize=0",
	}
}

// auditOption returns the kube-apiserver arguments for an audit log at path (relative to the
// working directory), after writing the policy into root; none when path is empty.
func auditOption(root, path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	policy, err := writeAuditPolicy(root)
	if err != nil {
		return nil, err
	}
	return auditArgs(policy, abs), nil
}
