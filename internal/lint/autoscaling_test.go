package lint

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

func step(n string) pathStep    { return pathStep{kind: stepName, name: n} }
func objStep(n string) pathStep { return pathStep{kind: stepName, name: n, mayBeBlock: true} }
func index(i int64) pathStep    { return pathStep{kind: stepIndex, index: i} }
func block(i int64) pathStep    { return pathStep{kind: stepIndex, index: i, optional: true} }
func anyBlock() pathStep        { return pathStep{kind: stepAnyIndex, optional: true} }

func parseIgnore(t *testing.T, s string) attrPath {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(s), "ignore", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", s, diags)
	}
	tr, diags := hcl.RelTraversalForExpr(expr)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", s, diags)
	}
	return ignorePath(tr)
}

// TestIgnorePath: an ignore_changes entry keeps every step, index steps
// included (reference: tfcapi-lint CLI, pool/autoscaling-ignore-changes).
func TestIgnorePath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want attrPath
	}{
		{"desired_capacity", attrPath{step("desired_capacity")}},
		{"scaling_config[0].desired_size", attrPath{step("scaling_config"), index(0), step("desired_size")}},
		{"scaling_config.0.desired_size", attrPath{step("scaling_config"), index(0), step("desired_size")}},
		{`tags["Name"]`, attrPath{step("tags"), step("Name")}},
		// A step that is not a name or a whole number ends the path: the
		// entry then covers more, never less.
		{"a[1.5].b", attrPath{step("a")}},
		{"a[true].b", attrPath{step("a")}},
	} {
		if got := parseIgnore(t, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestCovers: an ignore_changes path covers the attribute it names and
// everything under a parent it names (reference: tfcapi-lint CLI,
// pool/autoscaling-ignore-changes, the matching rule).
func TestCovers(t *testing.T) {
	nodeGroup := attrPath{step("scaling_config"), block(0), step("desired_size")}
	for _, tc := range []struct {
		rule   string
		ignore string
		attr   attrPath
		want   bool
	}{
		{"the attribute itself", "desired_capacity", attrPath{step("desired_capacity")}, true},
		{"another attribute", "min_size", attrPath{step("desired_capacity")}, false},
		{"no substring matching", "account_id", attrPath{step("count")}, false},
		{"a longer name is another attribute", "desired", attrPath{step("desired_capacity")}, false},
		{"the nested path", "scaling_config[0].desired_size", nodeGroup, true},
		{"the nested path without the block index", "scaling_config.desired_size", nodeGroup, true},
		{"the parent block", "scaling_config", nodeGroup, true},
		{"the parent block's first element", "scaling_config[0]", nodeGroup, true},
		{"a sibling in the block", "scaling_config[0].min_size", nodeGroup, false},
		{"another block of the type", "scaling_config[1].desired_size", nodeGroup, false},
		{"the second block of the type", "pool[1].size", attrPath{step("pool"), block(1), step("size")}, true},
		{"a dynamic block's content, any index", "scaling_config[0].desired_size", attrPath{step("scaling_config"), anyBlock(), step("desired_size")}, true},
		{"an object attribute's key", `scaling["desired"]`, attrPath{step("scaling"), step("desired")}, true},
		{"an object attribute's key by name", "scaling.desired", attrPath{step("scaling"), step("desired")}, true},
		{"an object attribute's other key", "scaling.min", attrPath{step("scaling"), step("desired")}, false},
		{"a tuple element", "pools[1].size", attrPath{step("pools"), index(1), step("size")}, true},
		{"a tuple's index is not optional", "pools.size", attrPath{step("pools"), index(1), step("size")}, false},
		{"an object value read as a block", "scaling_config[0].desired_size", attrPath{objStep("scaling_config"), step("desired_size")}, true},
		{"an object value read as an object", "scaling_config.desired_size", attrPath{objStep("scaling_config"), step("desired_size")}, true},
		{"an object value's sibling", "scaling_config[0].max_size", attrPath{objStep("scaling_config"), step("desired_size")}, false},
		{"an object value's other index", "scaling_config[1].desired_size", attrPath{objStep("scaling_config"), step("desired_size")}, false},
		{"deeper than the value can be followed", `tags["replicas"]`, attrPath{step("tags")}, true},
	} {
		if got := covers(parseIgnore(t, tc.ignore), tc.attr); got != tc.want {
			t.Errorf("%s: covers(%s, %s) = %v, want %v", tc.rule, tc.ignore, tc.attr, got, tc.want)
		}
	}
}

// TestCapacityFlow: the attributes var.replicas reaches, directly, through
// locals, through the arguments and outputs of nested local modules, and
// through for_each and dynamic block iterators; a module that is not local
// leaves the flow unresolved (reference: tfcapi-lint CLI,
// pool/autoscaling-ignore-changes).
func TestCapacityFlow(t *testing.T) {
	for _, tc := range []struct {
		rule       string
		files      map[string]string
		want       []string
		unresolved bool
	}{
		{"directly", map[string]string{"main.tf": `
resource "aws_autoscaling_group" "g" {
  desired_capacity = var.replicas
  min_size         = var.autoscaling.min
  name             = "g"
}`}, []string{"aws_autoscaling_group.g desired_capacity replicas"}, false},
		{"a bound reads both", map[string]string{"main.tf": `
resource "aws_autoscaling_group" "g" {
  min_size = var.autoscaling.enabled ? var.autoscaling.min : var.replicas
}`}, []string{"aws_autoscaling_group.g min_size replicas+autoscaling"}, false},
		{"through locals", map[string]string{"main.tf": `
locals {
  a = var.replicas
  b = max(local.a, 1)
}
resource "google_compute_instance_group_manager" "g" {
  target_size = local.b
}`}, []string{"google_compute_instance_group_manager.g target_size replicas"}, false},
		{"nested blocks and objects", map[string]string{"main.tf": `
resource "aws_eks_node_group" "g" {
  scaling_config {
    desired_size = var.replicas
  }
  scaling_config {
    desired_size = 1
  }
  scaling_config {
    desired_size = var.replicas
  }
  settings = { pool = { size = var.replicas, name = "x" } }
  list     = [1, var.replicas]
}`}, []string{
			"aws_eks_node_group.g list[1] replicas",
			"aws_eks_node_group.g scaling_config[0].desired_size replicas",
			"aws_eks_node_group.g scaling_config[2].desired_size replicas",
			"aws_eks_node_group.g settings.pool.size replicas",
		}, false},
		{"meta-arguments are not attributes", map[string]string{"main.tf": `
resource "aws_instance" "g" {
  count = var.replicas
  lifecycle {
    precondition {
      condition     = var.replicas > 0
      error_message = "x"
    }
  }
}`}, nil, false},
		{"for_each and each", map[string]string{"main.tf": `
locals {
  pools = { a = { count = var.replicas } }
}
resource "google_container_node_pool" "p" {
  for_each   = local.pools
  node_count = each.value.count
  name       = each.key
}`}, []string{"google_container_node_pool.p name replicas", "google_container_node_pool.p node_count replicas"}, false},
		{"a dynamic block's iterator", map[string]string{"main.tf": `
resource "aws_eks_node_group" "g" {
  dynamic "scaling_config" {
    for_each = [var.replicas]
    iterator = s
    content {
      desired_size = s.value
    }
  }
}`}, []string{"aws_eks_node_group.g scaling_config[0].desired_size replicas"}, false},
		{"into a nested local module and back out", map[string]string{
			"main.tf": `
module "group" {
  source  = "./group"
  desired = var.replicas
}
resource "terraform_data" "echo" {
  input = module.group.size
}`,
			"group/main.tf": `
variable "desired" {
  type = number
}
resource "aws_autoscaling_group" "g" {
  desired_capacity = var.desired
}
output "size" {
  value = var.desired
}`,
		}, []string{"aws_autoscaling_group.g desired_capacity replicas", "terraform_data.echo input replicas"}, false},
		{"a module call's for_each and each", map[string]string{
			"main.tf": `
module "pool" {
  source   = "./pool"
  for_each = { a = var.replicas }
  size     = each.value
}`,
			"pool/main.tf": `
variable "size" {
  type = number
}
resource "aws_autoscaling_group" "g" {
  desired_capacity = var.size
}`,
		}, []string{"aws_autoscaling_group.g desired_capacity replicas"}, false},
		{"into a registry module", map[string]string{"main.tf": `
module "asg" {
  source           = "terraform-aws-modules/autoscaling/aws"
  desired_capacity = var.replicas
}`}, nil, true},
		{"only var.autoscaling into a registry module", map[string]string{"main.tf": `
module "asg" {
  source   = "terraform-aws-modules/autoscaling/aws"
  min_size = var.autoscaling.min
}`}, nil, false},
		{"JSON syntax", map[string]string{"main.tf.json": `{
  "resource": {"aws_eks_node_group": {"g": {
    "scaling_config": {"desired_size": "${var.replicas}"},
    "dynamic": {"launch_template": {"for_each": [1], "content": {"version": "${var.replicas}"}}},
    "lifecycle": {"ignore_changes": ["${var.replicas}"]}
  }}}
}`}, []string{"aws_eks_node_group.g launch_template[0].version replicas", "aws_eks_node_group.g scaling_config.desired_size replicas"}, false},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			src := mapSource{}
			for n, c := range tc.files {
				src[n] = []byte(c)
			}
			root, all, err := loadModule(src)
			if err != nil {
				t.Fatal(err)
			}
			f := newFlow(root, all)
			var got []string
			for _, a := range f.attrs(all) {
				var from []string
				if a.taint&taintReplicas != 0 {
					from = append(from, "replicas")
				}
				if a.taint&taintAutoscaling != 0 {
					from = append(from, "autoscaling")
				}
				got = append(got, a.res.typ+"."+a.res.name+" "+a.path.String()+" "+strings.Join(from, "+"))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("attributes:\n got %q\nwant %q", got, tc.want)
			}
			if f.unresolved != tc.unresolved {
				t.Errorf("unresolved = %v, want %v", f.unresolved, tc.unresolved)
			}
		})
	}
}

// TestAutoscalingFindingNamesTheAttributes: the finding names the
// desired-capacity attributes left unignored, five at most (reference:
// tfcapi-lint CLI, pool/autoscaling-ignore-changes).
func TestAutoscalingFindingNamesTheAttributes(t *testing.T) {
	var b strings.Builder
	b.WriteString("resource \"example_group\" \"g\" {\n  min = var.autoscaling.min\n")
	for i := range 7 {
		fmt.Fprintf(&b, "  size_%d = var.replicas\n", i)
	}
	b.WriteString("}\n")
	root, all, err := loadModule(mapSource{"main.tf": []byte(b.String())})
	if err != nil {
		t.Fatal(err)
	}
	fs := &findings{}
	(&moduleChecks{role: contract.RoleMachinePool, root: root, all: all, fs: fs}).autoscaling()
	if len(fs.list) != 1 {
		t.Fatalf("findings: %+v", fs.list)
	}
	msg := fs.list[0].Message
	for _, want := range []string{"size_0 of example_group.g at main.tf:1", "size_4 of example_group.g", "; 2 more)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "size_5") || strings.Contains(msg, "min of") {
		t.Errorf("message names too much: %s", msg)
	}
}

// TestNullWhileAutoscaling: a root module value that is null whenever
// var.autoscaling.enabled is true sets no desired capacity while the pool
// autoscales, directly or through locals; anything unknown is not null
// (reference: tfcapi-lint CLI, pool/autoscaling-ignore-changes).
func TestNullWhileAutoscaling(t *testing.T) {
	src := `
variable "fixed" {
  type    = bool
  default = false
}
locals {
  on      = var.autoscaling.enabled
  desired = local.on ? null : var.replicas
  deep    = local.desired
  set     = var.autoscaling.enabled ? var.replicas : null
}
resource "x" "y" {
  direct   = var.autoscaling.enabled ? null : var.replicas
  negated  = !var.autoscaling.enabled ? var.replicas : null
  local    = local.desired
  deep     = local.deep
  try      = try(var.autoscaling.enabled ? null : var.replicas, 1)
  set      = local.set
  plain    = var.replicas
  other    = var.fixed ? null : var.replicas
  each     = each.value
  unknownf = nope(var.replicas)
  literal  = null
}`
	root, _, err := loadModule(mapSource{"main.tf": []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	e := newAutoscalingEval(root)
	attrs, _ := root.resources[0].body.JustAttributes()
	want := map[string]bool{"direct": true, "negated": true, "local": true, "deep": true, "try": true, "literal": true}
	for n, a := range attrs {
		if got := e.null(a.Expr); got != want[n] {
			t.Errorf("%s: null while autoscaling = %v, want %v", n, got, want[n])
		}
	}
}
