package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"

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
	if kind, arg, ok := strings.Cut(format, "="); ok && (kind == "custom-columns" || kind == "custom-columns-file") {
		p, err := columnsFor(kind, arg)
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

// columns prints custom columns, kubectl's -o custom-columns: a header of
// the column names, then one line per object with each column's JSONPath
// result ("<none>" when it finds nothing).
type columns struct {
	names  []string
	paths  []*jsonpath.JSONPath
	header bool
}

// columnsFor parses -o custom-columns=NAME:PATH,... or reads
// -o custom-columns-file=FILE (a line of names, then a line of paths).
func columnsFor(kind, arg string) (*columns, error) {
	var names, specs []string
	switch kind {
	case "custom-columns":
		if arg == "" {
			return nil, fmt.Errorf("-o custom-columns= names no column: use NAME:.metadata.name,READY:.ready")
		}
		for _, col := range strings.Split(arg, ",") {
			name, path, ok := strings.Cut(col, ":")
			if !ok || name == "" || path == "" {
				return nil, fmt.Errorf("custom column %q is not NAME:JSONPATH, e.g. READY:.ready", col)
			}
			names, specs = append(names, name), append(specs, path)
		}
	default:
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("custom columns file: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		var lines [][]string
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 0 {
				lines = append(lines, f)
			}
		}
		if len(lines) != 2 || len(lines[0]) != len(lines[1]) {
			return nil, fmt.Errorf("custom columns file %s: want two lines, the column names and as many JSONPaths", arg)
		}
		names, specs = lines[0], lines[1]
	}
	c := &columns{names: names, header: true}
	for i, s := range specs {
		if !strings.HasPrefix(s, "{") {
			if !strings.HasPrefix(s, ".") {
				s = "." + s
			}
			s = "{" + s + "}"
		}
		p := jsonpath.New(names[i]).AllowMissingKeys(true)
		if err := p.Parse(s); err != nil {
			return nil, fmt.Errorf("custom column %s: JSONPath %q: %w", names[i], specs[i], err)
		}
		c.paths = append(c.paths, p)
	}
	return c, nil
}

// PrintObj prints obj (or each item of a list) as one line; the header
// goes with the first call only, so a watch's lines line up under it.
func (c *columns) PrintObj(obj runtime.Object, w io.Writer) error {
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if c.header {
		fmt.Fprintln(tw, strings.Join(c.names, "\t"))
		c.header = false
	}
	for _, it := range items {
		u, ok := it.(runtime.Unstructured)
		if !ok {
			return fmt.Errorf("custom columns print objects read as unstructured, not %T", it)
		}
		cells := make([]string, 0, len(c.paths))
		for _, p := range c.paths {
			cells = append(cells, cell(p, u.UnstructuredContent()))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell is one column's value: its results joined by commas, "<none>" for
// none.
func cell(p *jsonpath.JSONPath, content map[string]any) string {
	results, err := p.FindResults(content)
	if err != nil {
		return "<none>"
	}
	var vals []string
	for _, r := range results {
		for _, v := range r {
			if !v.IsValid() || (v.CanInterface() && v.Interface() == nil) {
				continue
			}
			vals = append(vals, fmt.Sprint(v.Interface()))
		}
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}
