// Package imagebuild builds CAPTF's OCI images in Go, with no container
// engine (go-containerregistry): a module image that bundles a module
// directory at /captf/module and a runtime binary at /captf/runtime, owned by
// and run as USER 65532, with the io.captf.* labels of the Image Contract;
// and, through the same Spec, any other image made of files placed at fixed
// paths (for example a static manager or runner binary). Images are
// reproducible (fixed timestamps) and are written to an OCI image layout
// directory or pushed to a registry (the local environment's loopback
// registry among them).
package imagebuild
