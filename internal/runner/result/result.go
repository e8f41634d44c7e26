package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

const (
	// Version is the version of the result document format.
	Version = 1
	// MaxBytes caps the encoded document (the kubelet keeps at most 4096
	// bytes of a termination message).
	MaxBytes = 4096
	// MaxSummaryBytes caps the curated failure summary (error.tail).
	MaxSummaryBytes = 512
	// MaxPlanResources caps plan.resources.
	MaxPlanResources = 50
	// MaxDriftResources caps drift.resources.
	MaxDriftResources = 20
	// MaxResourceBytes caps one plan.resources entry (the CRD's
	// status.plan.resources items allow 600 characters).
	MaxResourceBytes = 600
)

// Document is the runner's result document.
type Document struct {
	// Version is always Version.
	Version int `json:"version"`
	// Op is the operation the Job ran.
	Op infrav1.Operation `json:"op"`
	// Image describes the module image.
	Image Image `json:"image"`
	// Runtime describes the runtime command and its version.
	Runtime Runtime `json:"runtime"`
	// Steps are the runtime commands run, in order (version -json excluded).
	Steps []Step `json:"steps"`
	// Drift is what a drift Job found; null for every other operation and
	// for a drift Job that stopped before its plan was read.
	Drift *Drift `json:"drift"`
	// Error is set when the run failed; null on success.
	Error *Error `json:"error"`
	// Changes are the counts from the apply or destroy summary line.
	Changes *Changes `json:"changes,omitempty"`
	// Plan summarizes the plan of a plan Job, and of an apply that was
	// blocked or whose plan changed since it was approved.
	Plan *Plan `json:"plan,omitempty"`
	// Module is what the runner found matching the generated root's
	// contract outputs against the module's own output declarations. It is
	// absent when the runner did not check: a restore (its root calls no
	// module), a run that stopped before its root was built, or a module
	// whose files the runner could not parse (the runtime then reports the
	// module's problem itself). A reader that predates it ignores it.
	Module *Module `json:"module,omitempty"`
}

// Module is what the runner found about the module's declarations.
type Module struct {
	// UndeclaredOutputs are the contract outputs the module does not
	// declare, sorted; the generated root did not re-export them. Empty
	// (never null) when the module declares every one.
	UndeclaredOutputs []string `json:"undeclaredOutputs"`
}

// Image describes the module image.
type Image struct {
	// Ref is the image reference, echoed from --image.
	Ref string `json:"ref"`
	// ProvidersMirror reports whether the image ships /captf/providers.
	ProvidersMirror bool `json:"providersMirror"`
}

// Runtime describes the runtime.
type Runtime struct {
	// Command is the runtime command (--bin).
	Command []string `json:"command"`
	// Version is the runtime version reported by version -json; empty when
	// it could not be read.
	Version string `json:"version"`
}

// Step is one runtime command.
type Step struct {
	// Name of the step: init, force-unlock, validate, plan, show, apply,
	// refresh, destroy, state-push or state-list.
	Name string `json:"name"`
	// Exit is the command's exit code (-1 when it was killed by a signal or
	// could not be started).
	Exit int `json:"exit"`
	// Seconds is the step's wall-clock duration, to the millisecond.
	Seconds float64 `json:"seconds"`
}

// Drift is what a drift Job's plan found.
type Drift struct {
	// Detected is true when the plan had changes.
	Detected bool `json:"detected"`
	// Add, Change and Destroy count the planned resource actions (a
	// replacement counts in both Add and Destroy).
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
	// Resources are the drifted addresses, sorted, at most MaxDriftResources.
	Resources []string `json:"resources,omitempty"`
}

// ErrorKind is the kind of a failed run.
type ErrorKind = infrav1.RunErrorKind

// Error describes a failed run, never with raw process output.
type Error struct {
	// Kind is image-layout, step, interrupted, blocked or plan-changed.
	Kind ErrorKind `json:"kind"`
	// Step names the step that failed or was running, when there is one.
	Step *string `json:"step"`
	// Tail is the curated failure summary, at most MaxSummaryBytes (the name
	// is historical: it is never raw stderr).
	Tail string `json:"tail,omitempty"`
}

// Changes are the counts from an apply or destroy summary line.
type Changes struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
	Import  int `json:"import,omitempty"`
}

// Plan summarizes a plan.
type Plan struct {
	// Hash is the plan hash ("p1:" + sha256 hex of the sorted change lines).
	Hash string `json:"hash"`
	// Add, Change and Destroy count the planned resource actions (a
	// replacement counts in both Add and Destroy).
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
	// Outputs counts the changed root outputs.
	Outputs int `json:"outputs,omitempty"`
	// Import and Move count imported and moved resources.
	Import int `json:"import,omitempty"`
	Move   int `json:"move,omitempty"`
	// Resources are "<address> (<label>)", sorted, at most MaxPlanResources.
	Resources []string `json:"resources,omitempty"`
	// Truncated is set when Resources does not list every change.
	Truncated bool `json:"truncated,omitempty"`
}

// StepName returns a pointer to name, for Error.Step.
func StepName(name string) *string {
	if name == "" {
		return nil
	}
	return &name
}

// Marshal encodes d compactly within MaxBytes, shrinking a copy of it in the
// documented order when needed. d itself is never modified.
func Marshal(d *Document) ([]byte, error) {
	if d == nil {
		return nil, errors.New("no result document")
	}
	c := copyDoc(d)
	for i := range c.Steps {
		c.Steps[i].Seconds = math.Round(c.Steps[i].Seconds*1000) / 1000
	}
	if c.Error != nil {
		c.Error.Tail = text.Truncate(c.Error.Tail, MaxSummaryBytes)
	}
	if c.Plan != nil {
		for i, r := range c.Plan.Resources {
			c.Plan.Resources[i] = text.Truncate(r, MaxResourceBytes)
		}
	}
	if c.Plan != nil && len(c.Plan.Resources) > MaxPlanResources {
		c.Plan.Resources = c.Plan.Resources[:MaxPlanResources]
		c.Plan.Truncated = true
	}
	if c.Drift != nil && len(c.Drift.Resources) > MaxDriftResources {
		c.Drift.Resources = c.Drift.Resources[:MaxDriftResources]
	}

	shrinks := []func() bool{
		func() bool { // 1. the changes
			if c.Changes == nil {
				return false
			}
			c.Changes = nil
			return true
		},
		func() bool { // 2. the error summary
			if c.Error == nil || c.Error.Tail == "" {
				return false
			}
			c.Error.Tail = ""
			return true
		},
		func() bool { // 3. the plan and drift resource lists
			done := false
			if c.Plan != nil && len(c.Plan.Resources) > 0 {
				c.Plan.Resources = nil
				c.Plan.Truncated = true
				done = true
			}
			if c.Drift != nil && len(c.Drift.Resources) > 0 {
				c.Drift.Resources = nil
				done = true
			}
			return done
		},
	}
	for {
		b, err := encode(c)
		if err != nil {
			return nil, err
		}
		if len(b) <= MaxBytes {
			return b, nil
		}
		shrunk := false
		for _, s := range shrinks {
			if s() {
				shrunk = true
				break
			}
		}
		if shrunk {
			continue
		}
		// 4. the step history, oldest first.
		if len(c.Steps) > 0 {
			drop := max(1, (len(b)-MaxBytes)/32)
			c.Steps = c.Steps[min(drop, len(c.Steps)):]
			continue
		}
		// Last resort, for oversized flags only: the runtime command, then
		// the image reference. The hash and counts always stay.
		if len(c.Runtime.Command) > 0 {
			c.Runtime.Command = nil
			continue
		}
		if over := len(b) - MaxBytes; c.Image.Ref != "" {
			c.Image.Ref = text.Truncate(c.Image.Ref, max(0, len(c.Image.Ref)-over-8))
			continue
		}
		return nil, fmt.Errorf("result document is %d bytes even without its optional parts, over the %d-byte cap", len(b), MaxBytes)
	}
}

// Decode parses a result document, as read back from a termination message.
// It is strict: an unknown field, or anything after the one JSON object,
// makes the document unreadable.
func Decode(b []byte) (*Document, error) {
	var d Document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("result document is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("result document has data after its JSON object")
	}
	if d.Version != Version {
		return nil, fmt.Errorf("result document version %d is not the supported version %d", d.Version, Version)
	}
	return &d, nil
}

func encode(d *Document) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encoding result document: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func copyDoc(d *Document) *Document {
	c := *d
	c.Runtime.Command = append([]string(nil), d.Runtime.Command...)
	c.Steps = append([]Step{}, d.Steps...)
	if d.Drift != nil {
		dr := *d.Drift
		dr.Resources = append([]string(nil), d.Drift.Resources...)
		c.Drift = &dr
	}
	if d.Error != nil {
		e := *d.Error
		c.Error = &e
	}
	if d.Changes != nil {
		ch := *d.Changes
		c.Changes = &ch
	}
	if d.Plan != nil {
		p := *d.Plan
		p.Resources = append([]string(nil), d.Plan.Resources...)
		c.Plan = &p
	}
	if d.Module != nil {
		c.Module = &Module{UndeclaredOutputs: append([]string{}, d.Module.UndeclaredOutputs...)}
	}
	return &c
}
