package jobs

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// Bounds of status.lastRun and status.source (reference-facts §11.9).
const (
	maxLastRunSteps      = 16
	maxStepNameBytes     = 64
	maxSummaryBytes      = 512
	maxDriftResources    = 20
	maxResourceBytes     = 512
	maxRuntimeVersion    = 64
	maxJobNameBytes      = 63
	maxTerminationParsed = 16 << 10
	maxUndeclared        = 16
	maxOutputNameBytes   = 64
)

// Result is what a finished Job's runner reported, mapped to the API.
type Result struct {
	// Readable is true when a result document was decoded.
	Readable bool
	// Problem says why the document is unreadable (missing, not JSON, an
	// unsupported version, an unknown error kind); it quotes no content.
	Problem string
	// Document is the decoded document, nil when unreadable.
	Document *result.Document
	// LastRun is status.lastRun. Job and Operation are always set; the
	// rest only from a readable document.
	LastRun infrav1.LastRun
	// RuntimeVersion is the runtime's version (status.source.runtimeVersion);
	// "" when unknown.
	RuntimeVersion string
	// Plan is the plan summary of a plan Job, and of an apply that was
	// blocked or whose plan changed.
	Plan *result.Plan
	// Changes are the apply or destroy summary counts.
	Changes *result.Changes
	// DriftDetected is true when a drift Job's plan found drift.
	DriftDetected bool
	// OutputsChecked is true when the runner matched the contract outputs
	// against the module's declarations (the document's module section);
	// false for a restore, an older runner, or a run stopped before its
	// root was built.
	OutputsChecked bool
	// UndeclaredOutputs are the contract outputs the module does not
	// declare, sorted and de-duplicated (OutputsValid=False/OutputsMissing);
	// nil when none or when OutputsChecked is false.
	UndeclaredOutputs []string
}

// TerminationMessage returns the termination message of the module
// container, the runner's result document, and whether the container has
// terminated.
func TerminationMessage(pod *corev1.Pod) (string, bool) {
	if pod == nil {
		return "", false
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.Name != SourceContainer {
			continue
		}
		if t := cs.State.Terminated; t != nil {
			return t.Message, true
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			return t.Message, true
		}
	}
	return "", false
}

// DecodeResult maps the result document in message (a termination
// message) to a Result for the Job of the given name and operation. It
// never fails: a missing or garbled document gives Readable false with the
// Problem named, and a LastRun carrying only the Job and operation. Every
// value is brought within the API's bounds (at most 16 steps, the newest;
// names, summaries and resource addresses cut on a UTF-8 boundary).
func DecodeResult(job string, op infrav1.Operation, message string) Result {
	res := Result{LastRun: infrav1.LastRun{Job: truncate(job, maxJobNameBytes), Operation: op}}
	msg := strings.TrimSpace(message)
	switch {
	case msg == "":
		res.Problem = "no result document"
		return res
	case len(msg) > maxTerminationParsed:
		res.Problem = fmt.Sprintf("result document of %d bytes is over %d bytes", len(msg), maxTerminationParsed)
		return res
	}
	doc, err := result.Decode([]byte(msg))
	if err != nil {
		res.Problem = problemOf(err)
		return res
	}
	if doc.Error != nil && !knownErrorKind(doc.Error.Kind) {
		res.Problem = fmt.Sprintf("result document has an unknown error kind %q", truncate(string(doc.Error.Kind), 32))
		return res
	}
	res.Readable = true
	res.Document = doc
	res.RuntimeVersion = truncate(doc.Runtime.Version, maxRuntimeVersion)
	res.Plan = doc.Plan
	res.Changes = doc.Changes
	if m := doc.Module; m != nil {
		res.OutputsChecked = true
		res.UndeclaredOutputs = undeclaredOutputs(m.UndeclaredOutputs)
	}

	steps := doc.Steps
	if len(steps) > maxLastRunSteps {
		steps = steps[len(steps)-maxLastRunSteps:]
	}
	if len(steps) > 0 {
		res.LastRun.Steps = make([]infrav1.RunStep, len(steps))
		for i, s := range steps {
			name := truncate(s.Name, maxStepNameBytes)
			if name == "" {
				name = "unknown"
			}
			res.LastRun.Steps[i] = infrav1.RunStep{
				Name:                 name,
				ExitCode:             clampInt32(s.Exit),
				DurationMilliseconds: millis(s.Seconds),
			}
		}
	}
	if e := doc.Error; e != nil {
		re := &infrav1.RunError{Kind: e.Kind, Summary: truncate(e.Tail, maxSummaryBytes)}
		if e.Step != nil {
			re.Step = truncate(*e.Step, maxStepNameBytes)
		}
		res.LastRun.Error = re
	}
	if d := doc.Drift; d != nil {
		res.DriftDetected = d.Detected
		ds := &infrav1.DriftSummary{
			Add:     ptr.To(clampCount(d.Add)),
			Change:  ptr.To(clampCount(d.Change)),
			Destroy: ptr.To(clampCount(d.Destroy)),
		}
		for _, r := range d.Resources {
			if len(ds.Resources) == maxDriftResources {
				break
			}
			if r = truncate(r, maxResourceBytes); r != "" {
				ds.Resources = append(ds.Resources, r)
			}
		}
		res.LastRun.Drift = ds
	}
	return res
}

// undeclaredOutputs bounds the runner's list of undeclared outputs: names
// cut to 64 bytes, empty ones dropped, sorted, de-duplicated, at most 16.
func undeclaredOutputs(names []string) []string {
	var out []string
	for _, n := range names {
		if n = truncate(n, maxOutputNameBytes); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxUndeclared {
		out = out[:maxUndeclared]
	}
	return out
}

func problemOf(err error) string {
	// The decoder's messages name a position or a version, never content
	// beyond a short token; keep them short anyway.
	return truncate(err.Error(), 200)
}

func knownErrorKind(k infrav1.RunErrorKind) bool {
	switch k {
	case infrav1.RunErrorImageLayout, infrav1.RunErrorStep, infrav1.RunErrorInterrupted,
		infrav1.RunErrorBlocked, infrav1.RunErrorPlanChanged:
		return true
	}
	return false
}

// truncate cuts s to at most n bytes on a UTF-8 boundary and replaces
// invalid UTF-8.
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func clampInt32(v int) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}

func clampCount(v int) int32 {
	if v < 0 {
		return 0
	}
	return clampInt32(v)
}

func millis(seconds float64) int64 {
	if math.IsNaN(seconds) || seconds <= 0 {
		return 0
	}
	ms := math.Round(seconds * 1000)
	if ms > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(ms)
}
