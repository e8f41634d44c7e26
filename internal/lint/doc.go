// Package lint is tfcapi-lint: it checks a Terraform or OpenTofu module, and
// the OCI image built from it, against CAPTF's module contract and image
// contract without running init, plan or apply (book: tfcapi-lint, Module
// Contract, Image Contract).
//
// Module lint parses .tf, .tf.json, .tofu and .tofu.json files with
// hashicorp/hcl/v2 (native and JSON syntax), follows nested local modules,
// and never runs terraform or tofu nor touches the network. Image lint reads
// an image from a registry (go-containerregistry, the default docker/podman
// keychain) or from a local OCI image layout (oci:<dir>), flattens its
// layers and checks the fixed paths, the labels and the user, then lints the
// module found at /captf/module.
//
// The contract inputs and outputs come from internal/contract, so the linter
// and the controller never disagree about them. Every check has an ID, a
// severity and the roles it applies to (Checks); findings are reported as
// text, JSON or SARIF 2.1.0, and the exit code says whether a CI step passes.
//
// The test and init commands (the contract test, which does run the
// runtime, and the scaffold) live in internal/lint/kit; this package parses
// their command lines and prints their results.
package lint
