// Package metrics owns CAPTF's Prometheus series (reference-facts §3): the
// captf_* collectors, registered once on controller-runtime's registry so
// the manager serves them on --diagnostics-address next to the
// controller_runtime_*, workqueue_* and rest_client_* series.
//
// Callers never touch a collector: they call the small typed helpers here
// (JobFinished, Decision, SetReady, ObjectDeleted, …) with the label values
// the reference lists. Every label is a bounded enum; only the eight
// per-object gauges carry namespace and name, and ObjectDeleted removes all
// of an object's series when the object is gone. Failure counters count
// transitions, not reconciles: the caller decides when a transition
// happened and calls the helper once.
//
// HELP texts carry the "[ALPHA] " stability prefix.
package metrics
