// Package examples checks the code blocks of the book (docs/book) by the
// book's example conventions: every page is parsed with a Markdown parser,
// and each yaml block is applied (server-side, dry run, strict field
// validation) to a real kube-apiserver carrying CAPTF's and Cluster API's
// CRDs and CAPTF's admission webhooks, or placed into a minimal object when
// it is marked as a fragment, or only parsed when it is marked as not being
// an object; hcl blocks must parse as HCL and json blocks as JSON.
//
// The conventions, as a page writes them:
//
//   - a ```yaml block with no marker holds one or more complete Kubernetes
//     objects, separated by ---;
//   - <!-- fragment: <Kind> <path> --> on the line right before a ```yaml
//     fence: the snippet sits at the dot path <path> (spec, spec.jobs,
//     spec.template.spec, metadata) of an object of that Kind;
//   - <!-- example: not-an-object --> on the line right before a ```yaml
//     fence: YAML that is not a Kubernetes object (a clusterctl
//     configuration, a rule file, module output values), parsed only;
//   - ```hcl blocks parse as HCL, ```json blocks as JSON.
package examples
