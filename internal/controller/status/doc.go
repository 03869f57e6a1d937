// Package status is how the controller writes what a Release shows and reports without the
// release's values: errors as it may write them (ErrorText, ErrorLine: the errors known to quote
// values by a form without them), the Release's own values taken out of every message, log line
// and returned error (ValueRedactor, Redacting), a status redacted before it is written
// (Redact), conditions and Event notes cut to what the API server accepts (PutCondition,
// CutNotes, EventNote), and the berth_releases metric (ReleaseMetrics).
//
// Which condition reason an error is, and which conditions a Release has, are the controller's
// (package controller: the Reason* and Condition* constants).
package status
