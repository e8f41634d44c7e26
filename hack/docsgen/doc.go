// Command docsgen writes the book's API reference page,
// docs/book/reference/api.md, from the Go source of api/v1alpha1.
//
// It parses the package with go/parser, go/ast and go/doc and renders every
// kind, every type and every field: the field's JSON name, its type, whether
// it is required, its doc comment, and the bounds, enums, defaults, list
// semantics and CEL rules read from its kubebuilder markers. The output is a
// pure function of the source, so a fresh run can be compared byte for byte
// with the committed page (test/verify does).
//
// Run it from anywhere inside the repository:
//
//	go run ./hack/docsgen
//
// Flags: -api (the API package directory) and -out (the page to write, or
// "-" for standard output). Relative paths are taken from the repository
// root.
package main
