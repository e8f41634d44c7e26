package result

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The plan detail: the attribute-level change list of a plan a person must
// review. It is too large for the termination message, so the runner
// writes it to the Secret captf-plan-<job> (owned like the per-run Secret,
// by the Job) and the manager copies it into the TerraformPlan record,
// then deletes the Secret. Sensitive values are masked before it is
// written; it never holds a value the runtime would not print.
const (
	// PlanDetailVersion is the version of the plan detail format.
	PlanDetailVersion = 1
	// PlanSecretPrefix prefixes the plan detail Secret: captf-plan-<job>.
	PlanSecretPrefix = "captf-plan-"
	// PlanDetailKey is the plan detail Secret's key: gzip of the JSON
	// document.
	PlanDetailKey = "plan.json.gz"
	// RunSecretPrefix prefixes the per-run Secret: captf-run-<job>.
	RunSecretPrefix = "captf-run-"
	// maxPlanDetailBytes caps the decompressed document the manager reads.
	maxPlanDetailBytes = 4 << 20
)

// PlanSecretName is the plan detail Secret of a Job, captf-plan-<job>.
func PlanSecretName(jobName string) string { return PlanSecretPrefix + jobName }

// PlanDetail is the change list of one plan.
type PlanDetail struct {
	Version int    `json:"version"`
	Hash    string `json:"hash"`
	// Changes are within the record's bounds (see infrav1.MaxPlanChangesBytes).
	Changes []infrav1.PlanResourceChange `json:"changes,omitempty"`
	Omitted *infrav1.PlanOmitted         `json:"omitted,omitempty"`
}

// EncodePlanDetail is gzip of the JSON document.
func EncodePlanDetail(d *PlanDetail) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encoding the plan detail: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the plan detail: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodePlanDetail reads what EncodePlanDetail wrote, refusing a document
// of another version or larger than 4 MiB once decompressed.
func DecodePlanDetail(b []byte) (*PlanDetail, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the plan detail is not gzip: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxPlanDetailBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing the plan detail: %w", err)
	}
	if len(raw) > maxPlanDetailBytes {
		return nil, fmt.Errorf("the plan detail exceeds %d bytes decompressed", maxPlanDetailBytes)
	}
	var d PlanDetail
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("the plan detail is not valid JSON: %w", err)
	}
	if d.Version != PlanDetailVersion {
		return nil, fmt.Errorf("plan detail version %d is not the supported version %d", d.Version, PlanDetailVersion)
	}
	if d.Hash == "" {
		return nil, errors.New("the plan detail names no plan hash")
	}
	return &d, nil
}
