package contract

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// Problem is one contract violation found while decoding outputs. It names
// where the violation is and the rule it breaks, never the offending value.
type Problem struct {
	// Path is the output name followed by the location inside its value,
	// for example "addresses[2].type".
	Path string
	// Rule is what the value breaks.
	Rule string
}

func (p Problem) String() string { return p.Path + ": " + p.Rule }

// Verdict is the OutputsValid condition a decode yields.
type Verdict struct {
	// Status is StatusTrue, StatusFalse or StatusUnknown.
	Status string
	// Reason is one of the Reason* OutputsValid constants.
	Reason string
	// Message is a one-line, value-free explanation.
	Message string
	// Missing lists contract outputs the module does not declare.
	Missing []string
	// Pending lists outputs whose null means "not yet known".
	Pending []string
	// Problems lists every contract violation found.
	Problems []Problem
	// ProviderIDChanged is set for a machine whose provider_id output
	// differs from the spec.providerID already written.
	ProviderIDChanged bool
	// FailureDomainMismatch is set for a machine whose failure_domain
	// output differs from the requested failure domain.
	FailureDomainMismatch bool
	// InstancesTruncated is set for a pool whose instances were capped.
	InstancesTruncated bool
}

// Valid reports whether the decoded outputs may be written: the status is
// True (OutputsValid or InstancesTruncated).
func (v Verdict) Valid() bool { return v.Status == StatusTrue }

// maxListedProblems bounds how many problems the message spells out.
const maxListedProblems = 5

type decoder struct {
	raw        RawOutputs
	undeclared []string
	missing    []string
	pending    []string
	problems   []Problem
}

func (d *decoder) problem(path, rule string) {
	d.problems = append(d.problems, Problem{Path: path, Rule: rule})
}

// value returns the parsed JSON value of output name (nil for null or
// absent); ok is false when the output is undeclared (recorded as missing)
// or unparsable (recorded as a problem).
func (d *decoder) value(name string) (any, bool) {
	if slices.Contains(d.undeclared, name) {
		d.missing = append(d.missing, name)
		return nil, false
	}
	raw := d.raw[name]
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		var ce *canonical.Error
		if errors.As(err, &ce) {
			d.problem(name+strings.TrimPrefix(ce.Path, "$"), ce.Problem)
		} else {
			d.problem(name, "not valid JSON")
		}
		return nil, false
	}
	return v, true
}

func (d *decoder) verdict(extra func(*Verdict)) Verdict {
	v := Verdict{Missing: d.missing, Pending: d.pending, Problems: d.problems}
	if extra != nil {
		extra(&v)
	}
	switch {
	case len(v.Missing) > 0:
		v.Status, v.Reason = StatusFalse, ReasonOutputsMissing
		v.Message = "the module does not declare the contract output(s) " + strings.Join(v.Missing, ", ")
	case len(v.Problems) > 0:
		v.Status, v.Reason = StatusFalse, ReasonOutputsInvalid
		listed := v.Problems
		if len(listed) > maxListedProblems {
			listed = listed[:maxListedProblems]
		}
		parts := make([]string, 0, len(listed))
		for _, p := range listed {
			parts = append(parts, p.String())
		}
		v.Message = "invalid output: " + strings.Join(parts, "; ")
		if n := len(v.Problems) - len(listed); n > 0 {
			v.Message += fmt.Sprintf(" (and %d more)", n)
		}
	case v.ProviderIDChanged:
		v.Status, v.Reason = StatusFalse, ReasonProviderIDChanged
		v.Message = "the provider_id output differs from the provider ID already written to spec.providerID"
	case v.FailureDomainMismatch:
		v.Status, v.Reason = StatusFalse, ReasonFailureDomainMismatch
		v.Message = "the failure_domain output differs from the failure domain the Machine requested"
	case len(v.Pending) > 0:
		v.Status, v.Reason = StatusUnknown, ReasonOutputsPending
		v.Message = "waiting for output(s) " + strings.Join(v.Pending, ", ") + " to become non-null"
	case v.InstancesTruncated:
		v.Status, v.Reason = StatusTrue, ReasonInstancesTruncated
		v.Message = fmt.Sprintf("the instances output is longer than %d entries; status.instances keeps the first %d by provider ID", MaxInstances, MaxInstances)
	default:
		v.Status, v.Reason = StatusTrue, ReasonOutputsValid
	}
	return v
}

// ClusterFacts are the facts a cluster's outputs are checked against.
type ClusterFacts struct {
	// Undeclared lists contract outputs the module is known not to declare
	// (OutputsMissing).
	Undeclared []string
}

// DecodeClusterOutputs decodes the cluster role's outputs and validates them
// against the contract and the Cluster API markers.
func DecodeClusterOutputs(raw RawOutputs, facts ClusterFacts) (ClusterOutputs, Verdict) {
	d := &decoder{raw: raw, undeclared: facts.Undeclared}
	var out ClusterOutputs
	if v, ok := d.value(OutputControlPlaneEndpoint); ok {
		out.ControlPlaneEndpoint = d.endpoint(OutputControlPlaneEndpoint, v)
	}
	if v, ok := d.value(OutputFailureDomains); ok {
		out.FailureDomains = d.failureDomains(OutputFailureDomains, v)
	}
	if v, ok := d.value(OutputExports); ok {
		if v == nil {
			d.pending = append(d.pending, OutputExports)
		} else if _, err := canonical.Marshal(v); err != nil {
			var ce *canonical.Error
			if errors.As(err, &ce) {
				d.problem(OutputExports+strings.TrimPrefix(ce.Path, "$"), ce.Problem)
			} else {
				d.problem(OutputExports, err.Error())
			}
		} else {
			out.Exports = slices.Clone(json.RawMessage(bytes.TrimSpace(raw[OutputExports])))
		}
	}
	out.Health = d.health(OutputHealth)
	return out, d.verdict(nil)
}

// DecodeFailureDomains decodes the cluster role's failure_domains output on
// its own, as the pools of the cluster read it from the cluster's state for
// their cluster_failure_domains input (Contract - MachinePool Role). null,
// absent and [] all give nil; problems lists what makes it invalid.
func DecodeFailureDomains(raw json.RawMessage) ([]FailureDomain, []Problem) {
	d := &decoder{raw: RawOutputs{OutputFailureDomains: raw}}
	v, ok := d.value(OutputFailureDomains)
	if !ok {
		return nil, d.problems
	}
	fds := d.failureDomains(OutputFailureDomains, v)
	if len(d.problems) > 0 {
		return nil, d.problems
	}
	return fds, nil
}

// MachineFacts are the facts a machine's outputs are checked against.
type MachineFacts struct {
	// RequestedFailureDomain is Machine.spec.failureDomain as rendered into
	// the failure_domain input (nil when none was requested).
	RequestedFailureDomain *string
	// ProviderID is TerraformMachine.spec.providerID, "" while unset.
	ProviderID string
	// Undeclared lists contract outputs the module is known not to declare
	// (OutputsMissing).
	Undeclared []string
}

// DecodeMachineOutputs decodes the machine role's outputs and validates them
// against the contract, the Cluster API markers and the machine's facts.
func DecodeMachineOutputs(raw RawOutputs, facts MachineFacts) (MachineOutputs, Verdict) {
	d := &decoder{raw: raw, undeclared: facts.Undeclared}
	var out MachineOutputs
	if v, ok := d.value(OutputProviderID); ok {
		out.ProviderID = d.providerID(OutputProviderID, v)
		if v == nil || isEmptyString(v) {
			d.pending = append(d.pending, OutputProviderID)
		}
	}
	if v, ok := d.value(OutputAddresses); ok {
		if v == nil {
			d.pending = append(d.pending, OutputAddresses)
		} else {
			out.Addresses = d.addresses(OutputAddresses, v)
		}
	}
	fdDeclared := false
	if v, ok := d.value(OutputFailureDomain); ok {
		fdDeclared = true
		if v != nil {
			if s, ok := d.str(OutputFailureDomain, v); ok {
				if d.length(OutputFailureDomain, s, 1, MaxFailureDomainNameLength) {
					out.FailureDomain = &s
				}
			}
		}
	}
	if v, ok := d.value(OutputInterruptible); ok && v != nil {
		if b, ok := d.boolean(OutputInterruptible, v); ok {
			out.Interruptible = b
		}
	}
	out.Health = d.health(OutputHealth)
	return out, d.verdict(func(vd *Verdict) {
		if facts.ProviderID != "" && out.ProviderID != nil && *out.ProviderID != facts.ProviderID {
			vd.ProviderIDChanged = true
		}
		if fdDeclared && facts.RequestedFailureDomain != nil &&
			(out.FailureDomain == nil || *out.FailureDomain != *facts.RequestedFailureDomain) &&
			!slices.ContainsFunc(d.problems, func(p Problem) bool { return strings.HasPrefix(p.Path, OutputFailureDomain) }) {
			vd.FailureDomainMismatch = true
		}
	})
}

// MachinePoolFacts are the facts a pool's outputs are checked against.
type MachinePoolFacts struct {
	// Undeclared lists contract outputs the module is known not to declare
	// (OutputsMissing).
	Undeclared []string
}

// DecodeMachinePoolOutputs decodes the machinepool role's outputs and
// validates them against the contract and the Cluster API markers.
func DecodeMachinePoolOutputs(raw RawOutputs, facts MachinePoolFacts) (MachinePoolOutputs, Verdict) {
	d := &decoder{raw: raw, undeclared: facts.Undeclared}
	var out MachinePoolOutputs
	if v, ok := d.value(OutputProviderID); ok {
		out.ProviderID = d.providerID(OutputProviderID, v)
	}
	if v, ok := d.value(OutputProviderIDList); ok {
		if v == nil {
			d.pending = append(d.pending, OutputProviderIDList)
		} else {
			out.ProviderIDList = d.providerIDList(OutputProviderIDList, v)
		}
	}
	if v, ok := d.value(OutputReplicas); ok {
		if v == nil {
			d.pending = append(d.pending, OutputReplicas)
		} else if n, ok := d.integer(OutputReplicas, v, 0, math.MaxInt32); ok {
			r := int32(n)
			out.Replicas = &r
		}
	}
	if v, ok := d.value(OutputInstances); ok && v != nil {
		out.Instances, out.InstancesTotal = d.instances(OutputInstances, v)
	}
	out.Health = d.health(OutputHealth)
	return out, d.verdict(func(vd *Verdict) {
		vd.InstancesTruncated = out.InstancesTotal > MaxInstances
	})
}

func isEmptyString(v any) bool {
	s, ok := v.(string)
	return ok && s == ""
}

// str converts a value to a string the way a Terraform string type
// constraint would: strings as they are, numbers and bools to their text.
func (d *decoder) str(path string, v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return string(t), true
	case bool:
		return strconv.FormatBool(t), true
	case nil:
		d.problem(path, "must not be null")
	default:
		d.problem(path, "must be a string")
	}
	return "", false
}

// boolean converts a value the way a Terraform bool constraint would.
func (d *decoder) boolean(path string, v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		if t == "true" || t == "false" {
			return t == "true", true
		}
	}
	d.problem(path, "must be a bool")
	return false, false
}

// integer converts a value the way a Terraform number constraint would and
// requires a whole number in [lo, hi].
func (d *decoder) integer(path string, v any, lo, hi int64) (int64, bool) {
	var lit string
	switch t := v.(type) {
	case json.Number:
		lit = string(t)
	case string:
		lit = strings.TrimSpace(t)
	default:
		d.problem(path, "must be a number")
		return 0, false
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		if f, ferr := strconv.ParseFloat(lit, 64); ferr == nil && f == math.Trunc(f) && f >= float64(lo) && f <= float64(hi) {
			return int64(f), true
		}
		if _, ferr := strconv.ParseFloat(lit, 64); ferr == nil {
			d.problem(path, fmt.Sprintf("must be a whole number from %d to %d", lo, hi))
		} else {
			d.problem(path, "must be a number")
		}
		return 0, false
	}
	if n < lo || n > hi {
		d.problem(path, fmt.Sprintf("must be from %d to %d", lo, hi))
		return 0, false
	}
	return n, true
}

// length checks a string's length in characters.
func (d *decoder) length(path, s string, lo, hi int) bool {
	n := utf8.RuneCountInString(s)
	if n < lo || n > hi {
		d.problem(path, fmt.Sprintf("must be %d to %d characters long, is %d", lo, hi, n))
		return false
	}
	return true
}

func (d *decoder) object(path string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.problem(path, "must be an object")
	}
	return m, ok
}

func (d *decoder) list(path string, v any) ([]any, bool) {
	l, ok := v.([]any)
	if !ok {
		d.problem(path, "must be a list")
	}
	return l, ok
}

// providerID decodes a provider ID: "" is null; otherwise 1–512 characters.
func (d *decoder) providerID(path string, v any) *string {
	if v == nil {
		return nil
	}
	s, ok := d.str(path, v)
	if !ok || s == "" {
		return nil
	}
	if !d.length(path, s, 1, MaxProviderIDLength) {
		return nil
	}
	return &s
}

func (d *decoder) endpoint(path string, v any) *Endpoint {
	if v == nil {
		return nil
	}
	m, ok := d.object(path, v)
	if !ok {
		return nil
	}
	host, hasHost := "", m["host"] != nil
	if hasHost {
		if host, ok = d.str(path+".host", m["host"]); !ok {
			return nil
		}
		hasHost = host != ""
	}
	var port int64
	hasPort := m["port"] != nil
	if hasPort {
		if port, ok = d.integer(path+".port", m["port"], 0, MaxPort); !ok {
			return nil
		}
		hasPort = port != 0
	}
	switch {
	case !hasHost && !hasPort:
		return nil
	case !hasHost || !hasPort:
		d.problem(path, "host and port must be set together")
		return nil
	}
	if !d.length(path+".host", host, 1, MaxEndpointHostLength) {
		return nil
	}
	return &Endpoint{Host: host, Port: int32(port)}
}

func (d *decoder) failureDomains(path string, v any) []FailureDomain {
	if v == nil {
		return nil
	}
	l, ok := d.list(path, v)
	if !ok {
		return nil
	}
	if len(l) > MaxFailureDomains {
		d.problem(path, fmt.Sprintf("must have at most %d entries, has %d", MaxFailureDomains, len(l)))
		return nil
	}
	var out []FailureDomain
	seen := map[string]int{}
	for i, e := range l {
		p := canonical.Index(path, i)
		m, ok := d.object(p, e)
		if !ok {
			continue
		}
		name, ok := d.str(p+".name", m["name"])
		if !ok || !d.length(p+".name", name, 1, MaxFailureDomainNameLength) {
			continue
		}
		if j, dup := seen[name]; dup {
			d.problem(p+".name", fmt.Sprintf("repeats the name of entry %d: names must be unique", j))
			continue
		}
		seen[name] = i
		fd := FailureDomain{Name: name, ControlPlane: true}
		if cp := m["control_plane"]; cp != nil {
			if b, ok := d.boolean(p+".control_plane", cp); ok {
				fd.ControlPlane = b
			}
		}
		if a := m["attributes"]; a != nil {
			if am, ok := d.object(p+".attributes", a); ok {
				fd.Attributes = make(map[string]string, len(am))
				for k, av := range am {
					if s, ok := d.str(canonical.Child(p+".attributes", k), av); ok {
						fd.Attributes[k] = s
					}
				}
			}
		}
		out = append(out, fd)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

var addressRank = func() map[string]int {
	m := map[string]int{}
	for i, t := range AddressTypes() {
		m[t] = i
	}
	return m
}()

// addresses decodes a list of addresses and sorts it in canonical order:
// InternalIP, InternalDNS, ExternalIP, ExternalDNS, Hostname, then by
// address.
func (d *decoder) addresses(path string, v any) []Address {
	l, ok := d.list(path, v)
	if !ok {
		return nil
	}
	if len(l) > MaxAddresses {
		d.problem(path, fmt.Sprintf("must have at most %d entries, has %d", MaxAddresses, len(l)))
		return nil
	}
	out := make([]Address, 0, len(l))
	for i, e := range l {
		p := canonical.Index(path, i)
		m, ok := d.object(p, e)
		if !ok {
			continue
		}
		t, ok := d.str(p+".type", m["type"])
		if !ok {
			continue
		}
		if _, known := addressRank[t]; !known {
			d.problem(p+".type", "must be one of "+strings.Join(AddressTypes(), ", "))
			continue
		}
		a, ok := d.str(p+".address", m["address"])
		if !ok || !d.length(p+".address", a, 1, MaxAddressLength) {
			continue
		}
		out = append(out, Address{Type: t, Address: a})
	}
	SortAddresses(out)
	return out
}

// SortAddresses sorts addresses in the contract's canonical order.
func SortAddresses(a []Address) {
	slices.SortStableFunc(a, func(x, y Address) int {
		return cmp.Or(cmp.Compare(addressRank[x.Type], addressRank[y.Type]), strings.Compare(x.Address, y.Address))
	})
}

func (d *decoder) providerIDList(path string, v any) []string {
	l, ok := d.list(path, v)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l))
	bad := false
	for i, e := range l {
		p := canonical.Index(path, i)
		s, ok := d.str(p, e)
		if !ok || !d.length(p, s, 1, MaxProviderIDLength) {
			bad = true
			continue
		}
		out = append(out, s)
	}
	if bad {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxProviderIDList {
		d.problem(path, fmt.Sprintf("must have at most %d distinct entries, has %d", MaxProviderIDList, len(out)))
		return nil
	}
	return out
}

func (d *decoder) instances(path string, v any) ([]Instance, int) {
	l, ok := d.list(path, v)
	if !ok {
		return nil, 0
	}
	out := make([]Instance, 0, min(len(l), MaxInstances))
	for i, e := range l {
		p := canonical.Index(path, i)
		m, ok := d.object(p, e)
		if !ok {
			continue
		}
		var inst Instance
		id := d.providerID(p+".provider_id", m["provider_id"])
		if id == nil {
			if m["provider_id"] == nil || isEmptyString(m["provider_id"]) {
				d.problem(p+".provider_id", "must be set")
			}
			continue
		}
		inst.ProviderID = *id
		if x := m["instance_id"]; x != nil {
			if s, ok := d.str(p+".instance_id", x); ok && s != "" && d.length(p+".instance_id", s, 1, MaxInstanceIDLength) {
				inst.InstanceID = s
			}
		}
		if x := m["addresses"]; x != nil {
			inst.Addresses = d.addresses(p+".addresses", x)
		}
		// A failure-domain name is 1–256 characters for an instance as for a
		// machine: "" is OutputsInvalid, never dropped (Module Contract, "Type
		// conventions"). Only an ID's "" reads as null, like instance_id's.
		if x := m["failure_domain"]; x != nil {
			if s, ok := d.str(p+".failure_domain", x); ok && d.length(p+".failure_domain", s, 1, MaxFailureDomainNameLength) {
				inst.FailureDomain = s
			}
		}
		if x := m["state"]; x != nil {
			if s, ok := d.str(p+".state", x); ok {
				if !slices.Contains(HealthStates(), s) {
					d.problem(p+".state", "must be one of "+strings.Join(HealthStates(), ", "))
				} else {
					inst.State = s
				}
			}
		}
		out = append(out, inst)
	}
	total := len(l)
	slices.SortStableFunc(out, func(x, y Instance) int { return strings.Compare(x.ProviderID, y.ProviderID) })
	if len(out) > MaxInstances {
		out = out[:MaxInstances:MaxInstances]
	}
	return out, total
}

// health decodes the common health output; a null value is pending.
func (d *decoder) health(name string) *Health {
	v, ok := d.value(name)
	if !ok {
		return nil
	}
	if v == nil {
		d.pending = append(d.pending, name)
		return nil
	}
	m, ok := d.object(name, v)
	if !ok {
		return nil
	}
	h := &Health{}
	bad := false
	if s, ok := d.str(name+".state", m["state"]); !ok {
		bad = true
	} else if !slices.Contains(HealthStates(), s) {
		d.problem(name+".state", "must be one of "+strings.Join(HealthStates(), ", "))
		bad = true
	} else {
		h.State = s
	}
	if m["healthy"] == nil {
		d.problem(name+".healthy", "must be set")
		bad = true
	} else if b, ok := d.boolean(name+".healthy", m["healthy"]); !ok {
		bad = true
	} else {
		h.Healthy = b
	}
	if x := m["message"]; x != nil {
		if s, ok := d.str(name+".message", x); ok {
			h.Message = &s
		} else {
			bad = true
		}
	}
	if x := m["reasons"]; x != nil {
		if l, ok := d.list(name+".reasons", x); ok {
			h.Reasons = make([]string, 0, len(l))
			for i, e := range l {
				if s, ok := d.str(canonical.Index(name+".reasons", i), e); ok {
					h.Reasons = append(h.Reasons, s)
				} else {
					bad = true
				}
			}
		} else {
			bad = true
		}
	}
	if bad {
		return nil
	}
	return h
}

// ShouldWriteEndpoint reports whether a cluster's control_plane_endpoint
// output is copied into TerraformCluster.spec.controlPlaneEndpoint: only a
// valid, non-null output, only while the field is still empty, and only
// from an apply whose rendered control_plane_endpoint input was null
// (Cluster Role "control_plane_endpoint (output)"). The first such write
// records captf.io/endpoint-source=module.
func ShouldWriteEndpoint(output, specEndpoint *Endpoint, renderedInputWasNull bool) bool {
	if !output.InBounds() || !renderedInputWasNull {
		return false
	}
	return specEndpoint == nil || specEndpoint.Host == "" && specEndpoint.Port == 0
}

// DecodeHealth decodes a health output value on its own, as tfcapi-lint
// checks the literal parts of a module's health expression. A null value
// gives nil and no problem (pending).
func DecodeHealth(raw json.RawMessage) (*Health, []Problem) {
	d := &decoder{raw: RawOutputs{OutputHealth: raw}}
	h := d.health(OutputHealth)
	return h, d.problems
}
