package jobs

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
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
	// status.plan (TerraformCluster): the plan hash is 1..128 characters,
	// at most 50 resources of 1..600 characters each.
	maxPlanHashBytes  = 128
	maxPlanResources  = result.MaxPlanResources
	maxPlanEntryBytes = result.MaxResourceBytes
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
	// Clamped names what of the document was brought within the API's
	// bounds (a negative or oversized count, a resource address cut,
	// a list shortened), for the condition message; nil when nothing was.
	Clamped []string
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
	if doc.Op != op {
		res.Problem = fmt.Sprintf("result document is for operation %q, not the Job's %s", truncate(string(doc.Op), 32), op)
		return res
	}
	if doc.Error != nil && !knownErrorKind(doc.Error.Kind) {
		res.Problem = fmt.Sprintf("result document has an unknown error kind %q", truncate(string(doc.Error.Kind), 32))
		return res
	}
	res.Readable = true
	res.Document = doc
	res.RuntimeVersion = truncate(doc.Runtime.Version, maxRuntimeVersion)
	res.Plan = boundPlan(doc.Plan, &res.Clamped)
	res.Changes = boundChanges(doc.Changes, &res.Clamped)
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

// PlanPreview is the plan as status.plan of a TerraformCluster records it,
// for the Job of the given name and inputs hash; nil without a plan. The
// plan is already within the API's bounds (DecodeResult).
func (r *Result) PlanPreview(job, inputsHash string, created metav1.Time) *infrav1.PlanPreview {
	pl := r.Plan
	if pl == nil {
		return nil
	}
	return &infrav1.PlanPreview{
		InputsHash: inputsHash,
		Job:        job,
		PlanHash:   pl.Hash,
		Add:        clampCount(pl.Add),
		Change:     clampCount(pl.Change),
		Destroy:    clampCount(pl.Destroy),
		Resources:  slices.Clone(pl.Resources),
		Truncated:  pl.Truncated,
		CreatedAt:  &created,
	}
}

// boundPlan brings a plan within status.plan's bounds, noting what it
// changed: counts within 0..2147483647, resources non-empty, cut to 600
// bytes on a UTF-8 boundary and at most 50 (Truncated then set). A plan
// whose hash is empty or over 128 bytes cannot be approved and is dropped.
func boundPlan(in *result.Plan, notes *[]string) *result.Plan {
	if in == nil {
		return nil
	}
	if in.Hash == "" || len(in.Hash) > maxPlanHashBytes || !utf8.ValidString(in.Hash) {
		*notes = append(*notes, fmt.Sprintf("the plan was dropped: its hash is empty, over %d bytes or not UTF-8", maxPlanHashBytes))
		return nil
	}
	out := *in
	out.Add = boundCount("plan add", in.Add, notes)
	out.Change = boundCount("plan change", in.Change, notes)
	out.Destroy = boundCount("plan destroy", in.Destroy, notes)
	out.Outputs = boundCount("plan outputs", in.Outputs, notes)
	out.Import = boundCount("plan import", in.Import, notes)
	out.Move = boundCount("plan move", in.Move, notes)
	out.Resources = nil
	cut, empty := 0, 0
	for _, r := range in.Resources {
		if len(out.Resources) == maxPlanResources {
			*notes = append(*notes, fmt.Sprintf("plan resources shortened from %d to %d", len(in.Resources), maxPlanResources))
			out.Truncated = true
			break
		}
		t := truncate(r, maxPlanEntryBytes)
		switch {
		case t == "":
			empty++
			continue
		case t != r:
			cut++
		}
		out.Resources = append(out.Resources, t)
	}
	if cut > 0 {
		*notes = append(*notes, fmt.Sprintf("%d plan resource address(es) cut to %d bytes", cut, maxPlanEntryBytes))
	}
	if empty > 0 {
		*notes = append(*notes, fmt.Sprintf("%d empty plan resource address(es) dropped", empty))
		out.Truncated = true
	}
	return &out
}

// boundChanges keeps the apply or destroy counts within 0..2147483647.
func boundChanges(in *result.Changes, notes *[]string) *result.Changes {
	if in == nil {
		return nil
	}
	return &result.Changes{
		Add:     boundCount("changes add", in.Add, notes),
		Change:  boundCount("changes change", in.Change, notes),
		Destroy: boundCount("changes destroy", in.Destroy, notes),
		Import:  boundCount("changes import", in.Import, notes),
	}
}

// boundCount clamps a count to 0..2147483647, noting a change.
func boundCount(what string, v int, notes *[]string) int {
	c := int(clampCount(v))
	if c != v {
		*notes = append(*notes, fmt.Sprintf("%s %d clamped to %d", what, v, c))
	}
	return c
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

// truncate replaces invalid UTF-8 in s with U+FFFD, then cuts it to at
// most n bytes without splitting a rune: what the result document says
// goes into status as valid UTF-8 within its bound.
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return text.Truncate(s, n)
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
