package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// recordedEvents keeps every event a run emits.
type recordedEvents struct {
	mu    sync.Mutex
	notes []string
}

func (r *recordedEvents) Emit(eventType, reason, action, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, eventType+" "+reason+" "+action+": "+note)
}

func (r *recordedEvents) Close() {}

// TestFailureSummaryIsBuiltFromRedactedOutput: a failing step whose stderr
// quotes a Secret-sourced variable and the bootstrap data (as a provider
// error may) yields a result document, events and a pod log that carry
// neither value (Security Model: What CAPTF keeps out of status, events and
// logs). The summary still says what failed.
func TestFailureSummaryIsBuiltFromRedactedOutput(t *testing.T) {
	const (
		password  = "db-password-sentinel-5f0c"
		bootstrap = "I2Nsb3VkLWNvbmZpZwpib290c3RyYXAtc2VudGluZWwK"
	)
	mainTF := []byte(`{"variable":{"bootstrap_data":{"sensitive":true},"db_password":{"sensitive":true},"machine_name":{}}}`)
	tfvars := []byte(`{"bootstrap_data":"` + bootstrap + `","db_password":"` + password + `","machine_name":"m-0"}`)
	values, err := SensitiveValues(mainTF, tfvars)
	if err != nil {
		t.Fatal(err)
	}

	// A runtime that fails the way a provider does: diagnostics on stderr
	// quoting the values, in pieces, with one value split across writes.
	dir := t.TempDir()
	script := filepath.Join(dir, "runtime")
	body := "#!/bin/sh\n" +
		"printf '╷\\n│ Error: creating instance m-0: user_data \"" + bootstrap + "\" exceeds 16384 bytes\\n' >&2\n" +
		"printf '│ Error: connecting to the database with password \"" + password[:9] + "' >&2\n" +
		"printf '" + password[9:] + "\": authentication failed\\n╵\\n' >&2\n" +
		"echo 'Plan: 1 to add' \n" +
		"exit 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}

	var podOut, podErr bytes.Buffer
	events := &recordedEvents{}
	r := &runState{
		o:   &Options{Op: infrav1.OperationApply},
		rec: events,
		ex: &executor{
			bin: []string{script}, dir: dir, stdout: &podOut, stderr: &podErr,
			sensitive: values, stop: make(chan struct{}),
		},
		doc: &result.Document{Version: result.Version, Op: infrav1.OperationApply, Steps: []result.Step{}},
	}
	if _, ok := r.step(stepSpec{name: StepApply}); ok {
		t.Fatal("the failing step succeeded")
	}
	doc, err := json.Marshal(r.doc)
	if err != nil {
		t.Fatal(err)
	}
	if r.doc.Error == nil || !strings.Contains(r.doc.Error.Tail, "connecting to the database") || !strings.Contains(r.doc.Error.Tail, "creating instance m-0") {
		t.Fatalf("the summary lost what failed: %s", doc)
	}
	for what, text := range map[string]string{
		"the result document": string(doc),
		"the events":          strings.Join(events.notes, "\n"),
		"the pod log":         podOut.String() + podErr.String(),
	} {
		for name, v := range map[string]string{"the Secret-sourced variable": password, "the bootstrap data": bootstrap} {
			if strings.Contains(text, v) {
				t.Errorf("%s carries %s:\n%s", what, name, text)
			}
		}
	}
	if !strings.Contains(podErr.String(), Redacted) {
		t.Errorf("the pod log does not show the redaction marker:\n%s", podErr.String())
	}
}
