package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

// WriteText writes one line per finding, "<file>:<line>: <severity>
// [<id>] <message>" ("<module>" when the finding is about the whole
// module or image), then a summary line.
func WriteText(w io.Writer, r *Report) error {
	if r.Ref != "" {
		if _, err := fmt.Fprintf(w, "image %s (%s), platforms: %v\n", r.Ref, r.Digest, r.Platforms); err != nil {
			return err
		}
	}
	for _, f := range r.Findings {
		loc := f.File
		switch {
		case loc == "":
			loc = "<module>"
		case f.Line > 0:
			loc += ":" + strconv.Itoa(f.Line)
		}
		if _, err := fmt.Fprintf(w, "%s: %s [%s] %s\n", loc, f.Severity, f.ID, f.Message); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d error(s), %d warning(s), %d info\n", r.Summary.Error, r.Summary.Warning, r.Summary.Info)
	return err
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	return writeIndented(w, r)
}

// writeIndented writes v as indented JSON without HTML escaping.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// SARIF 2.1.0 (OASIS), the subset tfcapi-lint writes.
const (
	SARIFVersion = "2.1.0"
	SARIFSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// InformationURI is the tool's home page in SARIF.
	InformationURI = "https://github.com/captf-io/cluster-api-provider-terraform"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool      `json:"tool"`
	Results    []sarifResult  `json:"results"`
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// sarifLevel maps a severity to a SARIF result level.
func sarifLevel(s Severity) string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes the report as a SARIF 2.1.0 log: one run, one rule per
// check ID with its help text, one result per finding.
func WriteSARIF(w io.Writer, r *Report) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name: "tfcapi-lint", Version: version(), InformationURI: InformationURI,
		}},
		Results: []sarifResult{},
	}
	index := map[string]int{}
	for i, c := range checks {
		index[c.ID] = i
		roles := make([]string, 0, len(c.Roles))
		for _, role := range c.Roles {
			roles = append(roles, string(role))
		}
		sevs := make([]string, 0, len(c.Severities))
		for _, s := range c.Severities {
			sevs = append(sevs, string(s))
		}
		props := map[string]any{"roles": roles, "severities": sevs}
		if c.SeverityNote != "" {
			props["severityNote"] = c.SeverityNote
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID: c.ID, ShortDescription: sarifText{c.Summary}, FullDescription: sarifText{c.Summary},
			Help: sarifText{c.Help}, DefaultConfiguration: sarifConfig{Level: sarifLevel(c.Severities[0])},
			Properties: props,
		})
	}
	for _, f := range r.Findings {
		res := sarifResult{RuleID: f.ID, RuleIndex: index[f.ID], Level: sarifLevel(f.Severity), Message: sarifText{f.Message}}
		if f.File != "" {
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: (&url.URL{Path: f.File}).String()}}}
			if f.Line > 0 {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line}
			}
			res.Locations = []sarifLocation{loc}
		}
		run.Results = append(run.Results, res)
	}
	props := map[string]any{"summary": r.Summary}
	if r.FileSet != "" {
		props["fileSet"] = r.FileSet
	}
	if r.Ref != "" {
		props["ref"], props["digest"], props["platforms"] = r.Ref, r.Digest, r.Platforms
	}
	run.Properties = props
	return writeIndented(w, sarifLog{Schema: SARIFSchema, Version: SARIFVersion, Runs: []sarifRun{run}})
}
