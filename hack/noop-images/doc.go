// Command noop-images builds the no-op module images (cluster, machine,
// machinepool) from modules/noop, once per runtime: with the pinned OpenTofu
// and with the pinned HashiCorp Terraform at /captf/runtime. It writes them
// to OCI image layouts, pushes them to a registry, or both, and needs no
// container engine.
//
//	go run ./hack/noop-images --layout-dir _out/images --tag v0.1.0
//	go run ./hack/noop-images --registry 127.0.0.1:5000/captf --tag v0.1.0 --roles cluster,machine
//
// Each image is tagged <tag>-<runtime>, the Quick Start's tags:
// <tag>-opentofu and <tag>-terraform. With --layout-dir, each role's images
// go to <dir>/noop-<role>, an OCI layout holding them under those reference
// names (readable as oci:<dir>/noop-<role>:<tag>-terraform). With
// --registry, each image is pushed to <registry>/noop-<role>:<tag>-<runtime>.
// The digests are printed one per line.
package main
