package lint

import (
	"cmp"
	"fmt"
	"slices"
)

// Severity is how serious a finding is.
type Severity string

// The three severities, from least to most serious.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Finding is one thing a check found.
type Finding struct {
	// ID is the check ID, for example input/required.
	ID string `json:"id"`
	// Severity is info, warning or error.
	Severity Severity `json:"severity"`
	// File is the file the finding is about, relative to the module
	// directory (prefixed with /captf/module in image lint); "" is the
	// whole module or image.
	File string `json:"file"`
	// Line is the 1-based line in File; 0 is none.
	Line int `json:"line"`
	// Message says what is wrong and how to fix it. It names
	// declarations, never values.
	Message string `json:"message"`
}

// Summary counts the findings of each severity.
type Summary struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// Report is the result of one lint run.
type Report struct {
	// Ref, Digest and Platforms are set by image lint only: the reference
	// as given, the digest of the manifest or index it resolved to, and the
	// platforms linted.
	Ref       string   `json:"ref,omitempty"`
	Digest    string   `json:"digest,omitempty"`
	Platforms []string `json:"platforms,omitempty"`
	// Findings is sorted by file, line, ID and message; never null.
	Findings []Finding `json:"findings"`
	Summary  Summary   `json:"summary"`
	// FileSet is "opentofu" when the module has .tofu or .tofu.json files,
	// else "terraform"; empty when no module was read.
	FileSet string `json:"fileSet,omitempty"`
}

// Exit codes.
const (
	// ExitOK: no errors (with --strict, no warnings either).
	ExitOK = 0
	// ExitFindings: at least one error, or with --strict one warning.
	ExitFindings = 1
	// ExitUnparsable: the module could not be parsed, or the image could
	// not be pulled or extracted.
	ExitUnparsable = 2
	// ExitUsage: a bad command line, an invalid image reference among them.
	ExitUsage = 3
)

// finish applies the allowed warnings (downgraded to info), sorts the
// findings, removes exact duplicates and counts them.
func (r *Report) finish(allow map[string]bool) {
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for i, f := range r.Findings {
		if f.Severity == SeverityWarning && allow[f.ID] {
			r.Findings[i].Severity = SeverityInfo
		}
	}
	slices.SortFunc(r.Findings, compareFindings)
	r.Findings = slices.Compact(r.Findings)
	r.Summary = Summary{}
	for _, f := range r.Findings {
		switch f.Severity {
		case SeverityError:
			r.Summary.Error++
		case SeverityWarning:
			r.Summary.Warning++
		default:
			r.Summary.Info++
		}
	}
}

func compareFindings(a, b Finding) int {
	return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.ID, b.ID), cmp.Compare(a.Message, b.Message))
}

// ExitCode is the exit code the report earns: ExitFindings when it has an
// error, or under strict a warning; ExitOK otherwise.
func (r *Report) ExitCode(strict bool) int {
	if r.Summary.Error > 0 || (strict && r.Summary.Warning > 0) {
		return ExitFindings
	}
	return ExitOK
}

// findings collects findings while checks run.
type findings struct {
	list []Finding
	// prefix is put before every message ("[linux/arm64] " with
	// --all-platforms).
	prefix string
}

func (fs *findings) add(id string, sev Severity, file string, line int, format string, args ...any) {
	fs.list = append(fs.list, Finding{ID: id, Severity: sev, File: file, Line: line, Message: fs.prefix + fmt.Sprintf(format, args...)})
}
