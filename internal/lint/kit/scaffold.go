package kit

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

//go:embed scaffold/*.tmpl
var scaffoldFS embed.FS

// ExistsError is a scaffold refused because the directory already holds
// some of its files; nothing was written.
type ExistsError struct {
	Dir   string
	Files []string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already holds %s: the scaffold overwrites nothing; pick an empty or new directory", e.Dir, strings.Join(e.Files, ", "))
}

// ScaffoldFile is one file of the scaffold.
type ScaffoldFile struct {
	// Path is relative to the module directory, slash-separated.
	Path    string
	Content []byte
}

// Scaffold returns the files of a new module of the role: the contract
// variables, a main.tf whose terraform_data stand-in takes their place
// until real resources do, outputs that satisfy the contract, a versions
// file, one Containerfile per runtime, the contract test harness and a
// README. It runs offline as it is: it lints clean under --strict and
// passes its own contract test.
func Scaffold(role contract.Role) ([]ScaffoldFile, error) {
	if _, err := contract.ParseRole(string(role)); err != nil {
		return nil, err
	}
	harness, err := Harness(role, HarnessOptions{})
	if err != nil {
		return nil, err
	}
	files := []ScaffoldFile{
		{"versions.tf", []byte(versionsTF)},
		{"variables.tf", variablesTF(role)},
		{"main.tf", mainTF(role)},
		{"outputs.tf", []byte(outputsTF[role])},
		{filepath.ToSlash(HarnessFile), harness},
	}
	for _, name := range []string{"Containerfile.opentofu", "Containerfile.terraform", "README.md", ".gitignore"} {
		b, err := renderTemplate(name, role)
		if err != nil {
			return nil, err
		}
		files = append(files, ScaffoldFile{name, b})
	}
	return files, nil
}

func renderTemplate(name string, role contract.Role) ([]byte, error) {
	src, err := scaffoldFS.ReadFile("scaffold/" + name + ".tmpl")
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = t.Execute(&b, struct {
		Role     contract.Role
		Kind     string
		Contract string
		Harness  string
	}{role, string(role.Kind()), contract.Version, filepath.ToSlash(HarnessFile)})
	return b.Bytes(), err
}

// Init writes the role's scaffold into dir, creating it if needed. It
// refuses, writing nothing, when any of the files is already there.
func Init(dir string, role contract.Role) ([]string, error) {
	files, err := Scaffold(role)
	if err != nil {
		return nil, err
	}
	var existing []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil {
			existing = append(existing, f.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(existing) > 0 {
		return nil, &ExistsError{Dir: dir, Files: existing}
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, err
		}
		// O_EXCL: a file that appeared since the check is not overwritten.
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return written, err
		}
		_, werr := out.Write(f.Content)
		if cerr := out.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return written, werr
		}
		written = append(written, f.Path)
	}
	return written, nil
}

const versionsTF = `terraform {
  # terraform_data needs Terraform 1.4 or any OpenTofu release; the contract
  # test (tfcapi-lint test) needs OpenTofu 1.8 or Terraform 1.7, which have
  # mock providers.
  required_version = ">= 1.5"

  # List every provider the module uses, for example:
  # required_providers {
  #   aws = { source = "hashicorp/aws", version = "~> 6.0" }
  # }
}
`

// variablesTF declares the role's contract inputs with the types,
// sensitivity and null defaults of the contract (internal/contract).
func variablesTF(role contract.Role) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Contract inputs of the %s role, contract %s. CAPTF sets every one of\n", role, contract.Version)
	b.WriteString("# them on every run; keep their names and types. Add your own variables\n")
	b.WriteString("# below them, each with a default (set them in spec.variables).\n")
	for _, in := range role.Inputs() {
		b.WriteString("\nvariable \"" + in.Name + "\" {\n")
		b.WriteString("  type = " + in.Type + "\n")
		if in.Nullable {
			b.WriteString("  default = null\n")
		}
		if in.Sensitive {
			b.WriteString("  sensitive = true\n")
		}
		b.WriteString("}\n")
	}
	return hclwrite.Format(b.Bytes())
}

// stand-in resource names per role.
var standIn = map[contract.Role]string{
	contract.RoleCluster:     "cluster",
	contract.RoleMachine:     "instance",
	contract.RoleMachinePool: "group",
}

// mainTF holds a terraform_data stand-in fed every contract input but
// captf_contract (and autoscaling, which a real group only reads to stop
// managing its desired capacity).
func mainTF(role contract.Role) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The %s's infrastructure. terraform_data is a stand-in that keeps the\n", role)
	b.WriteString("# scaffold runnable with no cloud: replace it with your provider's\n")
	b.WriteString("# resources, tagged with var.captf_tags.\n")
	if role == contract.RoleMachinePool {
		b.WriteString("#\n# When var.autoscaling.enabled is true the cluster autoscaler owns the group's\n")
		b.WriteString("# size: give the group's desired capacity a lifecycle { ignore_changes }.\n")
	}
	fmt.Fprintf(&b, "resource \"terraform_data\" %q {\n  input = {\n", standIn[role])
	for _, in := range role.Inputs() {
		if in.Name == contract.InputContract || in.Name == contract.InputAutoscaling {
			continue
		}
		fmt.Fprintf(&b, "    %s = var.%s\n", in.Name, in.Name)
	}
	b.WriteString("  }\n}\n")
	return hclwrite.Format(b.Bytes())
}

const healthOutput = `
# The module's own view of the %s's health. Report what your provider
# knows (an instance state, a load balancer's health check).
output "health" {
  value = {
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }
}
`

var outputsTF = map[contract.Role]string{
	contract.RoleCluster: `# Contract outputs of the cluster role. Each placeholder satisfies the
# contract; replace it with what your resources report.

# With no endpoint given (the input is null), the module creates one and
# must output it, stable for the life of the cluster.
output "control_plane_endpoint" {
  value = var.control_plane_endpoint != null ? var.control_plane_endpoint : {
    host = "${var.captf_cluster.name}.${var.captf_cluster.namespace}.example.invalid"
    port = 6443
  }
}

# The zones machines may use; [] when the cloud has none.
output "failure_domains" {
  value = []
}

# Handed to every machine and pool of the cluster as captf_cluster_outputs.
# Strings, booleans and integers only.
output "exports" {
  value = {
    cluster_id = terraform_data.cluster.id
  }
}
` + fmt.Sprintf(healthOutput, "cluster"),
	contract.RoleMachine: `# Contract outputs of the machine role. Each placeholder satisfies the
# contract; replace it with what your resources report.

# The Node's spec.providerID, in the format your cloud controller manager
# or kubelet writes; stable for the life of the machine.
output "provider_id" {
  value = "example:///${var.captf_object.namespace}/${var.machine_name}"
}

output "addresses" {
  value = [{ type = "InternalIP", address = "192.0.2.10" }]
}

# The failure domain the machine landed in: the one it asked for, if any.
output "failure_domain" {
  value = var.failure_domain
}

# true for a spot or preemptible instance.
output "interruptible" {
  value = false
}
` + fmt.Sprintf(healthOutput, "machine"),
	contract.RoleMachinePool: `# Contract outputs of the machinepool role. Each placeholder satisfies the
# contract; replace it with what your resources report.

locals {
  member_ids = [for i in range(var.replicas) : "example:///${var.captf_object.namespace}/${var.machinepool_name}/${i}"]
}

# The group's own ID (may be null).
output "provider_id" {
  value = "example-group:///${var.captf_object.namespace}/${var.machinepool_name}"
}

# One provider ID per member, as its Node reports it.
output "provider_id_list" {
  value = sort(local.member_ids)
}

# The number of members the group has now.
output "replicas" {
  value = length(local.member_ids)
}

output "instances" {
  value = [for id in sort(local.member_ids) : { provider_id = id, state = "running" }]
}
` + fmt.Sprintf(healthOutput, "group"),
}
