package framework

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func protoBody(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	s := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	if err := s.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWriteSites: a write site is the verb, the resource, the name with the
// scenario's object names (whole segments) and hashes blanked, and what the
// write touched, whether the body is JSON or protobuf.
func TestWriteSites(t *testing.T) {
	names := []string{"f-cp-0", "f", "fault-01"}
	cases := []struct {
		method, path string
		body         []byte
		want         string
	}{
		{"POST", "/api/v1/namespaces/fault-01/secrets", protoBody(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "captf-inputs-c-f"}}),
			"create secrets captf-inputs-c-*"},
		{"POST", "/apis/events.k8s.io/v1/namespaces/fault-01/events", protoBody(t, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "f.18ed2caf6741c12a"}, Reason: "JobCreated"}),
			"create events JobCreated"},
		{"PATCH", "/apis/events.k8s.io/v1/namespaces/fault-01/events/f.18ed2caf6741c12a", []byte(`{"series":{"count":2}}`),
			"patch events series"},
		{"PATCH", "/apis/batch/v1/namespaces/fault-01/jobs/captf-m-f-cp-0-apply-a1-7f3a0c1d", []byte(`{"metadata":{"annotations":{"captf.io/bookkept":"true"}}}`),
			"patch jobs captf-m-*-apply-a1-# annotations[captf.io/bookkept]"},
		{"PATCH", "/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/fault-01/terraformclusters/f/status", []byte(`{"status":{"ready":true}}`),
			"patch terraformclusters/status * status"},
		{"PATCH", "/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/fault-01/terraformmachines/f-cp-0", []byte(`{"metadata":{"finalizers":["x"]}}`),
			"patch terraformmachines * finalizers"},
		{"PUT", "/api/v1/namespaces/fault-01/secrets/captf-creds-aws-fault-01", protoBody(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "captf-creds-aws-fault-01", Annotations: map[string]string{"captf.io/source-hash": "x", "other": "y"}}}),
			"update secrets captf-creds-aws-* annotations[captf.io/source-hash]"},
		{"DELETE", "/api/v1/namespaces/fault-01/secrets/captf-run-captf-c-f-apply-a2-0123abcd", nil,
			"delete secrets captf-run-captf-c-*-apply-a2-#"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.body))
		w, err := describe(r, names)
		if err != nil {
			t.Fatal(err)
		}
		if w.Site != tc.want {
			t.Errorf("%s %s: site %q, want %q", tc.method, tc.path, w.Site, tc.want)
		}
		// The body is still there for the API server.
		if b, _ := io.ReadAll(r.Body); !bytes.Equal(b, tc.body) && len(tc.body) > 0 {
			t.Errorf("%s %s: the body was not put back", tc.method, tc.path)
		}
	}
}

type okTransport struct{ n int }

func (o *okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	o.n++
	code := http.StatusOK
	if strings.Contains(r.URL.Path, "conflict") {
		code = http.StatusConflict
	}
	return &http.Response{StatusCode: code, Body: &closingBody{Reader: strings.NewReader("{}")}, Request: r}, nil
}

// closingBody is a response body that fails every read once closed, as a
// connection's does.
type closingBody struct {
	*strings.Reader
	closed bool
}

func (b *closingBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	return b.Reader.Read(p)
}

func (b *closingBody) Close() error {
	b.closed = true
	return nil
}

// TestFaultsKill: the manager is killed right after the n-th accepted write
// of the site; a refused write does not count; nothing goes out after the
// kill, reads included.
func TestFaultsKill(t *testing.T) {
	next := &okTransport{}
	cancelled := 0
	f := &Faults{KillSite: "delete secrets x", KillAt: 2, Cancel: func() { cancelled++ }}
	rt := f.Wrap(next)
	do := func(method, path string) error {
		resp, err := rt.RoundTrip(httptest.NewRequest(method, path, nil))
		if resp != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for _, p := range []string{"/api/v1/namespaces/a/secrets/x", "/api/v1/namespaces/a/secrets/conflict", "/api/v1/namespaces/a/configmaps/x"} {
		if err := do("DELETE", p); err != nil {
			t.Fatal(err)
		}
	}
	if f.Killed() != nil {
		t.Fatal("killed before the second accepted write of the site")
	}
	if err := do("DELETE", "/api/v1/namespaces/a/secrets/x"); err != nil {
		t.Fatal(err)
	}
	if k := f.Killed(); k == nil || k.Index != 3 || cancelled != 1 {
		t.Fatalf("killed after %v (cancel called %d times), want after accepted write 3", k, cancelled)
	}
	sent := next.n
	if err := do("GET", "/api/v1/namespaces/a/secrets/x"); err == nil {
		t.Error("a read went out after the kill")
	}
	if err := do("POST", "/api/v1/namespaces/a/secrets"); err == nil {
		t.Error("a write went out after the kill")
	}
	if next.n != sent {
		t.Errorf("%d requests reached the API server after the kill", next.n-sent)
	}
	if sites, n := Sites(f.Writes()); len(sites) != 2 || n["delete secrets x"] != 2 {
		t.Errorf("sites %v %v, want the secret deletes twice and the configmap delete", sites, n)
	}
}

// TestFaultsCut: while cut off, every request fails and is counted, and
// an open watch breaks; mended, requests go out again. List reads are
// counted by resource: a LIST, or a watch that sends the initial objects,
// never a plain watch or a GET of one object.
func TestFaultsCut(t *testing.T) {
	next := &okTransport{}
	f := &Faults{}
	rt := f.Wrap(next)
	watch, err := rt.RoundTrip(httptest.NewRequest("GET", "/apis/batch/v1/namespaces/a/jobs?watch=true", nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v1/namespaces/a/secrets", "/apis/batch/v1/namespaces/a/jobs/x", "/api/v1/nodes?watch=1&sendInitialEvents=true", "/api/v1/namespaces/a"} {
		resp, err := rt.RoundTrip(httptest.NewRequest("GET", p, nil))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got, want := f.Lists(), map[string]int{"secrets": 1, "nodes": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("lists %v, want %v", got, want)
	}
	f.Cut()
	if _, err := watch.Body.Read(make([]byte, 1)); err == nil {
		t.Error("an open watch read on after the cut")
	}
	sent := next.n
	for _, m := range []string{"GET", "POST"} {
		if _, err := rt.RoundTrip(httptest.NewRequest(m, "/api/v1/namespaces/a/secrets", nil)); err == nil {
			t.Errorf("a %s went out while cut off", m)
		}
	}
	if next.n != sent {
		t.Errorf("%d requests reached the API server while cut off", next.n-sent)
	}
	if n := f.Mend(); n != 2 {
		t.Errorf("%d requests counted while cut off, want 2", n)
	}
	if _, err := rt.RoundTrip(httptest.NewRequest("GET", "/api/v1/namespaces/a/secrets/x", nil)); err != nil {
		t.Errorf("a read failed after the mend: %v", err)
	}
}

func TestCollectionOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/secrets":                           "secrets",
		"/api/v1/namespaces/a/secrets":              "secrets",
		"/api/v1/namespaces":                        "namespaces",
		"/api/v1/namespaces/a":                      "",
		"/api/v1/namespaces/a/secrets/x":            "",
		"/apis/batch/v1/namespaces/a/jobs":          "jobs",
		"/apis/batch/v1/jobs":                       "jobs",
		"/apis/batch/v1/namespaces/a/jobs/x/status": "",
		"/healthz": "",
	} {
		got, ok := collectionOf(path)
		if got != want || ok != (want != "") {
			t.Errorf("collectionOf(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}
