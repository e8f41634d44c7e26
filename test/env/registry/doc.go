// Package registry runs an OCI registry on loopback (go-containerregistry's
// in-memory registry) for CAPTF's tests and local environment, and builds
// and pushes small OCI images into it.
package registry
