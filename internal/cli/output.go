package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// outputFlags are -o and the template flags of a listing command: every
// output kubectl get has, through cli-runtime's printers, with the
// plugin's own table (and -o wide) as the default.
type outputFlags struct {
	print *genericclioptions.PrintFlags
}

func newOutputFlags() *outputFlags {
	return &outputFlags{print: genericclioptions.NewPrintFlags("")}
}

// formats are the -o values, as kubectl spells them.
func (f *outputFlags) formats() []string {
	return append([]string{"wide"}, append(f.print.AllowedFormats(), "custom-columns", "custom-columns-file")...)
}

func (f *outputFlags) addFlags(cmd *cobra.Command) {
	f.print.JSONYamlPrintFlags.AddFlags(cmd)
	f.print.NamePrintFlags.AddFlags(cmd)
	f.print.TemplatePrinterFlags.AddFlags(cmd)
	cmd.Flags().StringVarP(f.print.OutputFormat, "output", "o", "",
		"Output format: the plugin's table by default, or one of "+strings.Join(f.formats(), ", ")+
			" (jsonpath=, go-template=, custom-columns= and their -file forms take their argument after =).")
	f.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
}

// output is what -o asks for: the plugin's table (printer nil; wide adds
// the wide columns) or a printer of the rows as objects.
type output struct {
	printer printers.ResourcePrinter
	wide    bool
}

// structured reports whether the output prints objects, not the table.
func (o output) structured() bool { return o.printer != nil }

func (f *outputFlags) toOutput() (output, error) {
	format := *f.print.OutputFormat
	tmpl := f.print.TemplatePrinterFlags.TemplateArgument
	switch {
	case format == "" && (tmpl == nil || *tmpl == ""):
		return output{}, nil
	case format == "wide":
		return output{wide: true}, nil
	}
	if kind, _, ok := strings.Cut(format, "="); ok && (kind == "custom-columns" || kind == "custom-columns-file") {
		p, err := get.NewCustomColumnsPrintFlags().ToPrinter(format)
		return output{printer: p}, err
	}
	if format == "custom-columns" || format == "custom-columns-file" {
		return output{}, fmt.Errorf("-o %s needs its argument: -o %s=%s", format, format, map[string]string{
			"custom-columns": "NAME:.metadata.name,READY:.ready", "custom-columns-file": "FILE"}[format])
	}
	p, err := f.print.ToPrinter()
	if err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return output{}, fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(f.formats(), ", "))
		}
		return output{}, err
	}
	return output{printer: p}, nil
}

// rowObject is a row as the printers see it: an object with the apiVersion,
// kind, name and namespace of the TerraformCluster, TerraformMachine or
// TerraformMachinePool it shows (so -o name names that object), and the
// row's fields beside them (ready, reason, lastRun, nextCheck, waitingOn,
// ...), as -o json prints them.
func rowObject(r Row) (*unstructured.Unstructured, error) {
	b, err := jsonMarshal(r)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["apiVersion"] = infrav1.GroupVersion.String()
	m["metadata"] = map[string]any{"name": r.Name, "namespace": r.Namespace}
	return &unstructured.Unstructured{Object: m}, nil
}

// rowList is rows as a v1 List, the way kubectl get prints several objects.
func rowList(rows []Row) (*unstructured.UnstructuredList, error) {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	for _, r := range rows {
		u, err := rowObject(r)
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, *u)
	}
	return l, nil
}

// printRowsWith prints rows through a printer: one row as its object, more
// (or none, when asked for a list) as a List.
func printRowsWith(out io.Writer, p printers.ResourcePrinter, rows []Row, list bool) error {
	if len(rows) == 1 && !list {
		u, err := rowObject(rows[0])
		if err != nil {
			return err
		}
		return p.PrintObj(u, out)
	}
	l, err := rowList(rows)
	if err != nil {
		return err
	}
	return p.PrintObj(l, out)
}
