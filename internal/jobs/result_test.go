package jobs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

func marshal(t testing.TB, d *result.Document) string {
	t.Helper()
	b, err := result.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func baseDoc(op infrav1.Operation) *result.Document {
	return &result.Document{
		Version: result.Version,
		Op:      op,
		Image:   result.Image{Ref: testImage},
		Runtime: result.Runtime{Command: []string{contract.RuntimePath}, Version: "1.12.6"},
		Steps: []result.Step{
			{Name: "init", Exit: 0, Seconds: 1.2345},
			{Name: "validate", Exit: 0, Seconds: 0.4},
			{Name: "apply", Exit: 0, Seconds: 12},
		},
	}
}

func TestDecodeResult(t *testing.T) {
	t.Run("steps map to name, exitCode and durationMilliseconds; the runtime version is kept", func(t *testing.T) {
		d := baseDoc(infrav1.OperationApply)
		d.Changes = &result.Changes{Add: 2, Change: 1}
		r := DecodeResult("job-a", infrav1.OperationApply, marshal(t, d))
		if !r.Readable {
			t.Fatalf("unreadable: %s", r.Problem)
		}
		want := infrav1.LastRun{Job: "job-a", Operation: infrav1.OperationApply, Steps: []infrav1.RunStep{
			{Name: "init", ExitCode: 0, DurationMilliseconds: 1235},
			{Name: "validate", ExitCode: 0, DurationMilliseconds: 400},
			{Name: "apply", ExitCode: 0, DurationMilliseconds: 12000},
		}}
		if !reflect.DeepEqual(r.LastRun, want) {
			t.Errorf("lastRun = %+v\nwant %+v", r.LastRun, want)
		}
		if r.RuntimeVersion != "1.12.6" || r.Changes == nil || r.Changes.Add != 2 {
			t.Errorf("runtime %q, changes %+v", r.RuntimeVersion, r.Changes)
		}
	})
	t.Run("error maps to kind, step and summary", func(t *testing.T) {
		d := baseDoc(infrav1.OperationApply)
		d.Steps[2].Exit = 1
		d.Error = &result.Error{Kind: infrav1.RunErrorStep, Step: result.StepName("apply"), Tail: "Error: creating instance: quota exceeded"}
		r := DecodeResult("job-a", infrav1.OperationApply, marshal(t, d))
		want := &infrav1.RunError{Kind: infrav1.RunErrorStep, Step: "apply", Summary: "Error: creating instance: quota exceeded"}
		if !reflect.DeepEqual(r.LastRun.Error, want) {
			t.Errorf("error = %+v", r.LastRun.Error)
		}
	})
	t.Run("drift maps to a DriftSummary with every count set", func(t *testing.T) {
		d := baseDoc(infrav1.OperationDrift)
		d.Drift = &result.Drift{Detected: true, Change: 1, Resources: []string{"aws_instance.cp"}}
		r := DecodeResult("job-d", infrav1.OperationDrift, marshal(t, d))
		want := &infrav1.DriftSummary{Add: ptr.To[int32](0), Change: ptr.To[int32](1), Destroy: ptr.To[int32](0), Resources: []string{"aws_instance.cp"}}
		if !reflect.DeepEqual(r.LastRun.Drift, want) || !r.DriftDetected {
			t.Errorf("drift = %+v detected %v", r.LastRun.Drift, r.DriftDetected)
		}
	})
	t.Run("the plan summary is kept for a plan Job", func(t *testing.T) {
		d := baseDoc(infrav1.OperationPlan)
		d.Plan = &result.Plan{Hash: "p1:abc", Add: 1, Resources: []string{"aws_vpc.main (create)"}}
		r := DecodeResult("job-p", infrav1.OperationPlan, marshal(t, d))
		if r.Plan == nil || r.Plan.Hash != "p1:abc" {
			t.Errorf("plan = %+v", r.Plan)
		}
	})

	// Shrunk documents: the runner drops parts in a fixed order to stay
	// within 4096 bytes; whatever is left must still decode.
	shrunk := []struct {
		name  string
		doc   func(t *testing.T) *result.Document
		check func(t *testing.T, r Result)
	}{
		{
			name: "shrunk once: the changes are gone",
			doc: func(t *testing.T) *result.Document {
				d := baseDoc(infrav1.OperationApply)
				d.Changes = &result.Changes{Add: 1}
				d.Error = &result.Error{Kind: infrav1.RunErrorStep, Step: result.StepName("apply"), Tail: strings.Repeat("x", 500)}
				// Pad the document to just over the cap with its changes, so
				// dropping them is enough.
				d.Runtime.Command = []string{""}
				d.Runtime.Command[0] = strings.Repeat("c", result.MaxBytes-len(marshal(t, d))+10)
				return d
			},
			check: func(t *testing.T, r Result) {
				if r.Changes != nil || r.LastRun.Error == nil || len(r.LastRun.Error.Summary) != 500 {
					t.Errorf("changes %+v, error %+v", r.Changes, r.LastRun.Error)
				}
			},
		},
		{
			name: "shrunk twice: the error summary is gone, the kind and step stay",
			doc: func(t *testing.T) *result.Document {
				d := baseDoc(infrav1.OperationApply)
				d.Error = &result.Error{Kind: infrav1.RunErrorStep, Step: result.StepName("apply"), Tail: strings.Repeat("y", 500)}
				d.Runtime.Command = []string{strings.Repeat("c", 3800)}
				return d
			},
			check: func(t *testing.T, r Result) {
				e := r.LastRun.Error
				if e == nil || e.Kind != infrav1.RunErrorStep || e.Step != "apply" || e.Summary != "" {
					t.Errorf("error = %+v", e)
				}
			},
		},
		{
			name: "shrunk three times: the plan's resource list is gone, its hash and counts stay",
			doc: func(t *testing.T) *result.Document {
				d := baseDoc(infrav1.OperationPlan)
				d.Plan = &result.Plan{Hash: "p1:" + strings.Repeat("f", 64), Add: 40, Destroy: 10}
				for i := 0; i < 50; i++ {
					d.Plan.Resources = append(d.Plan.Resources, fmt.Sprintf("module.role.aws_instance.node[%d] (create)", i)+strings.Repeat("z", 40))
				}
				return d
			},
			check: func(t *testing.T, r Result) {
				p := r.Plan
				if p == nil || len(p.Resources) != 0 || !p.Truncated || p.Add != 40 || p.Destroy != 10 || !strings.HasPrefix(p.Hash, "p1:") {
					t.Errorf("plan = %+v", p)
				}
			},
		},
		{
			name: "shrunk four times: the oldest steps are gone, the newest are kept",
			doc: func(t *testing.T) *result.Document {
				d := baseDoc(infrav1.OperationRefresh)
				d.Steps = nil
				for i := 0; i < 200; i++ {
					d.Steps = append(d.Steps, result.Step{Name: fmt.Sprintf("step-%03d", i), Seconds: 1})
				}
				return d
			},
			check: func(t *testing.T, r Result) {
				s := r.LastRun.Steps
				if len(s) != 16 || s[len(s)-1].Name != "step-199" {
					t.Errorf("%d steps, last %+v", len(s), s[len(s)-1])
				}
			},
		},
	}
	for _, tt := range shrunk {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc(t)
			msg := marshal(t, doc)
			if len(msg) > result.MaxBytes {
				t.Fatalf("document is %d bytes", len(msg))
			}
			r := DecodeResult("job", doc.Op, msg)
			if !r.Readable {
				t.Fatalf("unreadable: %s", r.Problem)
			}
			tt.check(t, r)
		})
	}
}

func TestDecodeResultUnreadable(t *testing.T) {
	tests := []struct {
		name, msg, problem string
	}{
		{"a missing document (pod killed before the runner wrote it)", "", "no result document"},
		{"whitespace only", " \n", "no result document"},
		{"not JSON", "panic: runtime error", "not valid JSON"},
		{"truncated JSON", `{"version":1,"op":"apply","steps":[{"name":"in`, "not valid JSON"},
		{"another version", `{"version":2,"op":"apply"}`, "version 2"},
		{"JSON null", "null", "version 0"},
		{"a wrong type", `{"version":1,"steps":"init"}`, "not valid JSON"},
		{"an unknown error kind", `{"version":1,"op":"apply","error":{"kind":"exploded","step":null}}`, `unknown error kind "exploded"`},
		{"an unknown field (a pod's own invention)", `{"version":1,"op":"apply","steps":[],"plan2":{}}`, `unknown field "plan2"`},
		{"data after the document", `{"version":1,"op":"apply","steps":[]} {"version":1}`, "data after its JSON object"},
		{"a document for another operation", `{"version":1,"op":"destroy","steps":[]}`, `for operation "destroy", not the Job's apply`},
		{"an oversized message", strings.Repeat(" ", 10) + "{" + strings.Repeat(`"a":1,`, 5000) + `"version":1}`, "over 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := DecodeResult("job-x", infrav1.OperationApply, tt.msg)
			if r.Readable || r.Document != nil {
				t.Fatal("readable")
			}
			if !strings.Contains(r.Problem, tt.problem) {
				t.Errorf("problem %q does not say %q", r.Problem, tt.problem)
			}
			want := infrav1.LastRun{Job: "job-x", Operation: infrav1.OperationApply}
			if !reflect.DeepEqual(r.LastRun, want) {
				t.Errorf("lastRun = %+v", r.LastRun)
			}
		})
	}
}

func TestDecodeResultBounds(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	resources := `"` + long + `",""`
	for i := 0; i < 24; i++ {
		resources += fmt.Sprintf(`,"r%d"`, i)
	}
	msg := fmt.Sprintf(`{"version":1,"op":"drift","runtime":{"version":%q},"steps":[{"name":"","exit":-1,"seconds":-3},{"name":%q,"exit":99999999999,"seconds":1e300}],`+
		`"error":{"kind":"step","step":%q,"tail":"%s"},"drift":{"detected":true,"add":-4,"change":1,"destroy":0,"resources":[%s]}}`,
		long, long, long, long+"\xff", resources)
	r := DecodeResult("job", infrav1.OperationDrift, msg)
	if !r.Readable {
		t.Fatalf("unreadable: %s", r.Problem)
	}
	lr := r.LastRun
	checks := []struct {
		rule string
		ok   bool
	}{
		{"runtimeVersion is at most 64 bytes", len(r.RuntimeVersion) <= 64 && utf8.ValidString(r.RuntimeVersion)},
		{"an empty step name becomes unknown", lr.Steps[0].Name == "unknown"},
		{"a negative duration becomes 0", lr.Steps[0].DurationMilliseconds == 0},
		{"step names are at most 64 bytes", len(lr.Steps[1].Name) <= 64 && utf8.ValidString(lr.Steps[1].Name)},
		{"an exit code beyond int32 is clamped", lr.Steps[1].ExitCode == 1<<31-1},
		{"a huge duration stays positive", lr.Steps[1].DurationMilliseconds > 0},
		{"the error step is at most 64 bytes", len(lr.Error.Step) <= 64},
		{"the summary is at most 512 bytes of valid UTF-8", len(lr.Error.Summary) <= 512 && utf8.ValidString(lr.Error.Summary)},
		{"drift counts are never negative", *lr.Drift.Add == 0 && *lr.Drift.Change == 1},
		{"at most 20 drift resources, none empty, each at most 512 bytes", len(lr.Drift.Resources) == 20 && allWithin(lr.Drift.Resources, 1, 512)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("bounds: %s", c.rule)
		}
	}
}

func allWithin(ss []string, lo, hi int) bool {
	for _, s := range ss {
		if len(s) < lo || len(s) > hi {
			return false
		}
	}
	return true
}

func TestTerminationMessage(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "nope"}}},
		{Name: SourceContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "doc"}}},
	}}}
	if msg, ok := TerminationMessage(pod); !ok || msg != "doc" {
		t.Errorf("TerminationMessage = %q, %v", msg, ok)
	}
	if _, ok := TerminationMessage(nil); ok {
		t.Error("a missing pod has a message")
	}
	running := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: SourceContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}}}
	if _, ok := TerminationMessage(running); ok {
		t.Error("a running container has a message")
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add(marshal(f, baseDoc(infrav1.OperationApply)))
	f.Add(`{"version":1,"error":{"kind":"step","step":"init","tail":"x"},"drift":{"resources":["a"]}}`)
	f.Add("")
	f.Add("{")
	f.Fuzz(func(t *testing.T, msg string) {
		r := DecodeResult("job", infrav1.OperationApply, msg)
		if r.Readable == (r.Problem != "") {
			t.Fatalf("readable %v with problem %q", r.Readable, r.Problem)
		}
		lr := r.LastRun
		if len(lr.Steps) > 16 || len(r.RuntimeVersion) > 64 {
			t.Fatalf("out of bounds: %d steps", len(lr.Steps))
		}
		for _, s := range lr.Steps {
			if s.Name == "" || len(s.Name) > 64 || s.DurationMilliseconds < 0 || !utf8.ValidString(s.Name) {
				t.Fatalf("bad step %+v", s)
			}
		}
		if e := lr.Error; e != nil && (len(e.Summary) > 512 || len(e.Step) > 64 || !knownErrorKind(e.Kind)) {
			t.Fatalf("bad error %+v", e)
		}
		if d := lr.Drift; d != nil && (len(d.Resources) > 20 || *d.Add < 0 || *d.Change < 0 || *d.Destroy < 0) {
			t.Fatalf("bad drift %+v", d)
		}
	})
}

// TestDecodeResultUndeclaredOutputs: the contract outputs the runner found
// undeclared reach the manager (Module Contract, "Null semantics"), bounded;
// a document without the module section (an older runner, a restore) reads
// as "not checked".
func TestDecodeResultUndeclaredOutputs(t *testing.T) {
	long := strings.Repeat("o", 100)
	tests := []struct {
		name        string
		module      *result.Module
		wantChecked bool
		want        []string
	}{
		{"no_section_is_not_checked", nil, false, nil},
		{"checked_and_complete", &result.Module{UndeclaredOutputs: []string{}}, true, nil},
		{"checked_and_missing", &result.Module{UndeclaredOutputs: []string{"health", "exports"}}, true, []string{"exports", "health"}},
		{"names_are_cut_deduplicated_and_capped", &result.Module{UndeclaredOutputs: append([]string{long, long, ""},
			"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "p", "q", "r")}, true,
			[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", long[:64], "p"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := baseDoc(infrav1.OperationApply)
			d.Module = tc.module
			r := DecodeResult("job-a", infrav1.OperationApply, marshal(t, d))
			if !r.Readable {
				t.Fatalf("unreadable: %s", r.Problem)
			}
			if r.OutputsChecked != tc.wantChecked || !reflect.DeepEqual(r.UndeclaredOutputs, tc.want) {
				t.Errorf("checked %v undeclared %v, want %v %v", r.OutputsChecked, r.UndeclaredOutputs, tc.wantChecked, tc.want)
			}
		})
	}
	t.Run("the_record_decide_reads_carries_them", func(t *testing.T) {
		d := baseDoc(infrav1.OperationApply)
		d.Module = &result.Module{UndeclaredOutputs: []string{"exports"}}
		c := Classification{Outcome: OutcomeSucceeded, Result: DecodeResult("job-a", infrav1.OperationApply, marshal(t, d))}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job-a", Labels: map[string]string{infrav1.OpLabel: "apply"}}}
		rec := Record(job, &c)
		if !rec.OutputsChecked || !reflect.DeepEqual(rec.UndeclaredOutputs, []string{"exports"}) {
			t.Errorf("record = %+v", rec)
		}
	})
}

// TestTruncateReplacesInvalidUTF8 checks the cut every decoded string goes
// through: invalid UTF-8 becomes U+FFFD before the cut, so what reaches
// status is valid and within its bound as written.
func TestTruncateReplacesInvalidUTF8(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\xffb", 10, "a\uFFFDb"},
		{"a\xffb", 3, "a"},
		{"ab\xff", 5, "ab\uFFFD"},
		{"abé", 3, "ab"},
	} {
		if got := truncate(c.s, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
