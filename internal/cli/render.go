package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

// age is a kubectl-style age ("5m", "2d3h"), "-" for none.
func age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// until is when a future time is due: "in 25m", or "due" once past.
func until(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	if !t.After(now) {
		return "due"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lastRun renders a row's active Job, else its last run.
func (r Row) lastRun() (string, *time.Time) {
	if r.Active != nil {
		return r.Active.Operation + " running", r.Active.At
	}
	if r.LastRun == nil {
		return "-", nil
	}
	return r.LastRun.Operation + " " + r.LastRun.Outcome, r.LastRun.At
}

// printTable writes rows as status's table; allNamespaces adds the
// NAMESPACE column, wide the image, state serial, backups and the Ready
// message.
func printTable(out io.Writer, rows []Row, now time.Time, allNamespaces, wide bool) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	head, lines := tableCells(rows, now, allNamespaces, wide)
	for _, cells := range append([][]string{head}, lines...) {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// tableCells are status's table: its header and a line of cells per row.
func tableCells(rows []Row, now time.Time, allNamespaces, wide bool) ([]string, [][]string) {
	head := []string{"NAME", "READY", "REASON", "LAST RUN", "AGE", "NEXT CHECK", "WAITING ON"}
	if allNamespaces {
		head = append([]string{"NAMESPACE"}, head...)
	}
	if wide {
		head = append(head, "IMAGE", "SERIAL", "BACKUPS", "MESSAGE")
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		run, at := r.lastRun()
		cells := []string{strings.ToLower(r.Kind) + "/" + r.Name, r.Ready, dash(r.Reason), run, age(at, now), until(r.NextCheck, now), dash(r.WaitingOn)}
		if allNamespaces {
			cells = append([]string{r.Namespace}, cells...)
		}
		if wide {
			serial := "-"
			if r.StateSerial > 0 {
				serial = strconv.FormatInt(r.StateSerial, 10)
			}
			cells = append(cells, dash(r.Image), serial, strconv.Itoa(r.StateBackups), dash(oneLine(r.Message)))
		}
		lines = append(lines, cells)
	}
	return head, lines
}

// columnWidths pads a table that is printed a few lines at a time (a
// watch's) to the widest cell of each column seen so far, so later lines
// stay under the header where they fit.
type columnWidths []int

func (w *columnWidths) print(out io.Writer, lines [][]string) error {
	for _, cells := range lines {
		for len(*w) < len(cells) {
			*w = append(*w, 0)
		}
		for i, c := range cells {
			(*w)[i] = max((*w)[i], utf8.RuneCountInString(c))
		}
	}
	for _, cells := range lines {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", (*w)[i]-utf8.RuneCountInString(c)+2))
			}
		}
		if _, err := fmt.Fprintln(out, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// oneLine keeps a condition message on one table line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Node is one object of a cluster's tree with its Jobs and, for the
// TerraformCluster, its machines and pools.
type Node struct {
	Row      Row      `json:"object"`
	Jobs     []JobRow `json:"jobs,omitempty"`
	Children []Node   `json:"children,omitempty"`
}

// flatten lists the tree's rows in its order, each with its Jobs.
func (n Node) flatten() []Row {
	r := n.Row
	r.Jobs = n.Jobs
	out := []Row{r}
	for _, c := range n.Children {
		out = append(out, c.flatten()...)
	}
	return out
}

// printTree writes a cluster's tree: the TerraformCluster, its Jobs, then
// each TerraformMachine and TerraformMachinePool with its own Jobs.
func printTree(out io.Writer, root Node, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tREASON\tLAST RUN\tAGE\tWAITING ON")
	var walk func(n Node, prefix, branch string)
	walk = func(n Node, prefix, branch string) {
		r := n.Row
		run, at := r.lastRun()
		fmt.Fprintf(tw, "%s%s/%s\t%s\t%s\t%s\t%s\t%s\n", prefix+branch, r.Kind, r.Name, r.Ready, dash(r.Reason), run, age(at, now), dash(r.WaitingOn))
		child := prefix
		switch branch {
		case "├─ ":
			child += "│  "
		case "└─ ":
			child += "   "
		}
		total := len(n.Jobs) + len(n.Children)
		i := 0
		next := func() string {
			i++
			if i == total {
				return "└─ "
			}
			return "├─ "
		}
		for _, j := range n.Jobs {
			fmt.Fprintf(tw, "%sJob/%s\t-\t%s\t%s\t%s\t-\n", child+next(), j.Name, j.State, j.Operation, age(j.At, now))
		}
		for _, c := range n.Children {
			walk(c, child, next())
		}
	}
	walk(root, "", "")
	return tw.Flush()
}
