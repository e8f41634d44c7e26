package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// ansiEscape matches CSI sequences (colors, cursor moves) and OSC sequences
// (terminated by BEL or ST); a provider or a local-exec child is not bound
// by -no-color.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// StripANSI removes ANSI escape sequences from b.
func StripANSI(b []byte) []byte {
	return ansiEscape.ReplaceAll(b, nil)
}

// FailureSummary builds the curated summary of a failed step, at most
// result.MaxSummaryBytes: for validate, the error diagnostics of its -json
// output; otherwise the "Error:" header lines of its stderr, ANSI stripped;
// and when neither yields a line, "step <name> exited <code>; see the Job's
// logs". It never returns raw output: a diagnostic's detail, where values
// appear, is never used.
func FailureSummary(step string, exit int, validateJSON, stderr []byte) string {
	var lines []string
	if len(validateJSON) > 0 {
		lines = validateDiagnostics(validateJSON)
	}
	if len(lines) == 0 {
		lines = errorHeaders(stderr)
	}
	if len(lines) == 0 {
		return fallbackSummary(step, exit)
	}
	return joinCapped(lines, "; ", result.MaxSummaryBytes)
}

func fallbackSummary(step string, exit int) string {
	return fmt.Sprintf("step %s exited %d; see the Job's logs", step, exit)
}

// validateDiagnostics returns "<summary> (<file>:<line>)" for each error
// diagnostic of validate -json output.
func validateDiagnostics(b []byte) []string {
	var out tfjson.ValidateOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	var lines []string
	seen := map[string]bool{}
	for _, d := range out.Diagnostics {
		if d.Severity != tfjson.DiagnosticSeverityError {
			continue
		}
		line := cleanLine(d.Summary)
		if line == "" {
			continue
		}
		if d.Range != nil && d.Range.Filename != "" {
			line = fmt.Sprintf("%s (%s:%d)", line, d.Range.Filename, d.Range.Start.Line)
		}
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	return lines
}

// errorHeaders returns the text of each "Error: ..." diagnostic header line
// of stderr, in order and without duplicates. The runtime draws diagnostics
// in a box ("╷", "│ Error: ...", "╵"), so the box prefix is removed first.
// A provider-installation diagnostic of init gets what its detail says in
// fixed terms (see providerDetail): the provider, its version, the platform
// and why, so that a broken mirror is clear from the summary alone.
func errorHeaders(stderr []byte) []string {
	var lines []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(StripANSI(stderr)))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	header, body := "", []string{}
	flush := func() {
		if header == "" {
			return
		}
		line := header
		if d := providerDetail(header, strings.Join(body, " ")); d != "" {
			line += ": " + d
		}
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
		header, body = "", nil
	}
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimLeft(raw, " \t│╷╵|")
		rest, ok := strings.CutPrefix(line, "Error: ")
		if !ok {
			if strings.HasPrefix(strings.TrimSpace(raw), "╵") || strings.HasPrefix(line, "Warning: ") {
				flush()
			} else if header != "" {
				body = append(body, strings.TrimSpace(line))
			}
			continue
		}
		flush()
		header = cleanLine(rest)
	}
	flush()
	return lines
}

// The diagnostics init reports when it cannot install a provider from the
// mirror, and the tokens read from their detail: a provider address
// (host/namespace/type), a version and a platform (os_arch).
var (
	providerInstallHeaders = map[string]bool{
		"Failed to install provider":                  true,
		"Incompatible provider version":               true,
		"Failed to query available provider packages": true,
	}
	providerAddress  = regexp.MustCompile(`\b[a-z0-9-]+(?:\.[a-z0-9-]+)+/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+\b`)
	providerVersion  = regexp.MustCompile(`\bv?([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.]+)?)\b`)
	providerPlatform = regexp.MustCompile(`\b(?:linux|darwin|windows|freebsd|openbsd|netbsd|solaris)_(?:amd64|arm64|386|arm)\b`)
)

// providerDetail returns, for a provider-installation diagnostic, the
// provider address, version and platform its detail names, and the reason
// in fixed words: "<address> <version>: <reason>". It copies no free text
// from the detail (only those three tokens), and returns "" for any other
// diagnostic.
func providerDetail(header, detail string) string {
	if !providerInstallHeaders[header] {
		return ""
	}
	var reason string
	switch {
	case strings.Contains(detail, "checksums previously recorded in the dependency lock file"):
		reason = "the package matches none of the checksums in the dependency lock file"
	case strings.Contains(detail, "does not have a package available for your current platform"):
		reason = "the mirror has no package for the platform"
	case strings.Contains(detail, "was not found in any of the search locations"):
		reason = "the provider is not in the mirror"
	}
	var parts []string
	if a := providerAddress.FindString(detail); a != "" {
		parts = append(parts, a)
	}
	if m := providerVersion.FindStringSubmatch(detail); m != nil {
		parts = append(parts, "v"+m[1])
	}
	if p := providerPlatform.FindString(detail); p != "" {
		parts = append(parts, "for "+p)
	}
	if len(parts) == 0 && reason == "" {
		return ""
	}
	out := strings.Join(parts, " ")
	if reason != "" {
		if out != "" {
			out += ": "
		}
		out += reason
	}
	return out
}

// cleanLine trims s and removes control characters.
func cleanLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// joinCapped joins parts with sep, keeping whole parts while they fit in
// limit bytes; a first part longer than limit is cut at a rune boundary.
func joinCapped(parts []string, sep string, limit int) string {
	var b strings.Builder
	for i, p := range parts {
		add := p
		if i > 0 {
			add = sep + p
		}
		if b.Len()+len(add) > limit {
			if i == 0 {
				return text.Truncate(p, limit)
			}
			break
		}
		b.WriteString(add)
	}
	return b.String()
}

// ParseChangesLine reads an apply or destroy summary line ("Apply complete!
// Resources: 1 imported, 2 added, 0 changed, 1 destroyed." or "Destroy
// complete! Resources: 3 destroyed.").
func ParseChangesLine(line string) (*result.Changes, bool) {
	line = strings.TrimSpace(string(StripANSI([]byte(line))))
	_, rest, ok := strings.Cut(line, "complete! Resources: ")
	if !ok || !(strings.HasPrefix(line, "Apply complete!") || strings.HasPrefix(line, "Destroy complete!")) {
		return nil, false
	}
	rest = strings.TrimSuffix(rest, ".")
	c := &result.Changes{}
	for _, part := range strings.Split(rest, ", ") {
		num, word, ok := strings.Cut(strings.TrimSpace(part), " ")
		if !ok {
			return nil, false
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			return nil, false
		}
		switch word {
		case "imported":
			c.Import = n
		case "added":
			c.Add = n
		case "changed":
			c.Change = n
		case "destroyed":
			c.Destroy = n
		case "forgotten":
			// Not part of the result's changes.
		default:
			return nil, false
		}
	}
	return c, true
}

// RuntimeVersion reads the version from version -json output.
func RuntimeVersion(b []byte) string {
	var v struct {
		TerraformVersion string `json:"terraform_version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return ""
	}
	return text.Truncate(cleanLine(v.TerraformVersion), 64)
}

// ManagedResources counts the managed resources in state list output
// (data sources are not counted).
func ManagedResources(stateList []byte) int {
	n := 0
	for _, line := range strings.Split(string(stateList), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "data.") || strings.Contains(line, ".data.") {
			continue
		}
		n++
	}
	return n
}

// unlockedAlready reports whether force-unlock's stderr says the lock it
// was asked to clear is no longer held: the state is already unlocked, the
// lock Lease does not exist, or another lock ID holds it now.
func unlockedAlready(stderr []byte) bool {
	s := string(StripANSI(stderr))
	return strings.Contains(s, "already unlocked") ||
		strings.Contains(s, "does not match existing lock") ||
		(strings.Contains(s, "Failed to unlock state") && strings.Contains(s, "not found"))
}
