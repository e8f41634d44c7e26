// Package e2e holds CAPTF's end-to-end scenarios: the manager, the real
// runner and OpenTofu, and Cluster API's controllers on the local
// environment of test/env.
package e2e
