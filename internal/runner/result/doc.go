// Package result owns the runner's result document: the compact JSON the
// runner writes to its container's termination-message path at the end of
// every run, and the manager reads back from the finished pod's status.
//
// The document carries the operation, the image reference, the runtime
// command and version, the steps run with their exit codes and durations,
// the drift found, the error (kind, step and the curated failure summary),
// the changes applied, the plan summary and the contract outputs the module
// does not declare. It never carries a module input, an output value, a plan
// value or raw process output.
//
// Marshal keeps the document within MaxBytes by dropping, in this order, the
// changes, the error summary, the plan and drift resource lists, and the
// step history (oldest first); the plan hash, every count and the list of
// undeclared contract outputs are never dropped. Decode is the reading side used by the manager.
package result
