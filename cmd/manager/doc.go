// Command manager is CAPTF's manager: the Cluster API infrastructure
// provider's controllers and webhooks in one process (book: Architecture).
// Flags and wiring live in internal/setup; this is only the entry point.
//
//	manager --leader-elect --diagnostics-address=:8443 --webhook-port=9443
//	manager version
package main
