// Command noop-images builds the three no-op module images (cluster,
// machine, machinepool) from modules/noop with the pinned OpenTofu binary at
// /captf/runtime, and writes them to OCI image layouts, pushes them to a
// registry, or both. It needs no container engine.
//
//	go run ./hack/noop-images --layout-dir _output/images --tag dev
//	go run ./hack/noop-images --registry 127.0.0.1:5000/captf --tag dev
//
// With --layout-dir, each image goes to <dir>/noop-<role>, an OCI layout
// holding the image under the reference name <tag> (readable as
// oci:<dir>/noop-<role>). With --registry, each image is pushed to
// <registry>/noop-<role>:<tag>. The digests are printed one per line.
// --roles builds only some roles ("cluster machine"); --terraform <binary>
// builds on Terraform instead of OpenTofu (make noop-images-push tags those
// <version>-terraform, the OpenTofu ones <version>-opentofu).
package main
