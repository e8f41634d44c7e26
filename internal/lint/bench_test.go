package lint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// writeModule50 writes a machinepool module of 50 files: the corpus base
// module (one file per contract input and output, main.tf, versions.tf)
// and enough extra files, each with user variables, locals, a resource and
// an output, to reach 50.
func writeModule50(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	writeBase(b, dir, contract.RoleMachinePool)
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for i := len(entries); i < 50; i++ {
		writeFile(b, filepath.Join(dir, fmt.Sprintf("extra_%02d.tf", i)), fmt.Sprintf(`variable "size_%[1]d" {
  type    = number
  default = %[1]d
}

locals {
  name_%[1]d = "${var.machinepool_name}-%[1]d"
  tags_%[1]d = merge(var.captf_tags, { index = "%[1]d" })
}

resource "terraform_data" "part_%[1]d" {
  input = {
    name = local.name_%[1]d
    size = var.size_%[1]d
    tags = local.tags_%[1]d
  }

  lifecycle {
    ignore_changes = [triggers_replace]
  }
}

output "part_%[1]d" {
  value = terraform_data.part_%[1]d.output
}
`, i))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 50 {
		b.Fatalf("%d files, want 50", len(entries))
	}
	return dir
}

// BenchmarkLint50Files compares module lint of a 50-file module with
// `tofu init -backend=false && tofu validate` on the same module, in the
// same run (the goal is lint at least 10 times faster).
func BenchmarkLint50Files(b *testing.B) {
	dir := writeModule50(b)
	b.Run("tfcapi-lint", func(b *testing.B) {
		for b.Loop() {
			r, err := LintModule(dir, ModuleOptions{Role: contract.RoleMachinePool, Contract: contract.Version})
			if err != nil || r.ExitCode(true) != ExitOK {
				b.Fatalf("%v %+v", err, r)
			}
		}
	})
	b.Run("tofu-init-validate", func(b *testing.B) {
		tofu, err := tools.Path("tofu")
		if err != nil {
			b.Skip(err)
		}
		home := b.TempDir()
		for b.Loop() {
			if err := os.RemoveAll(filepath.Join(dir, ".terraform")); err != nil {
				b.Fatal(err)
			}
			for _, args := range [][]string{{"init", "-backend=false", "-input=false", "-no-color"}, {"validate", "-no-color"}} {
				cmd := exec.Command(tofu, args...)
				cmd.Dir = dir
				cmd.Env = []string{"HOME=" + home, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("tofu %v: %v\n%s", args, err, out)
				}
			}
		}
	})
}

// BenchmarkLintCorpus lints the module of every corpus case once an
// iteration and reports the mean time a module takes (the goal is under
// 50 ms a module).
func BenchmarkLintCorpus(b *testing.B) {
	cases := readCorpus(b)
	dirs := make([]string, len(cases))
	for i, c := range cases {
		dirs[i] = c.materialize(b)
	}
	for b.Loop() {
		for i, c := range cases {
			if _, err := LintModule(dirs[i], ModuleOptions{Role: c.role, Contract: contract.Version}); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cases))/1e6, "ms/module")
}
