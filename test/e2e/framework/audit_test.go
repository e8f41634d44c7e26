package framework

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// auditLines are audit events as kube-apiserver writes them (JSON lines):
// a watch logged when it starts and when it ends, a create, a refused
// get, a discovery request, and a line still being written.
const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"w1","stage":"ResponseStarted","verb":"watch","user":{"username":"m"},"objectRef":{"resource":"secrets","apiVersion":"v1"},"annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c1","stage":"ResponseComplete","verb":"create","user":{"username":"m"},"objectRef":{"resource":"jobs","namespace":"ns","apiGroup":"batch","apiVersion":"v1"},"responseStatus":{"code":201},"annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"g1","stage":"ResponseComplete","verb":"get","user":{"username":"m"},"objectRef":{"resource":"pods","subresource":"log","namespace":"ns","name":"p","apiVersion":"v1"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d1","stage":"ResponseComplete","verb":"get","requestURI":"/apis","user":{"username":"m"},"responseStatus":{"code":200}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"w1","stage":"ResponseComplete","verb":"watch","user":{"username":"m"},"objectRef":{"resource":"secrets","apiVersion":"v1"},"responseStatus":{"code":200},"annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta`

func TestReadAudit(t *testing.T) {
	reqs, err := ReadAudit(strings.NewReader(auditLines))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.String())
	}
	want := []string{
		"watch secrets (m): 200",
		"create jobs.batch ns (m): 201",
		"get pods/log ns/p (m): 403",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if reqs[0].Denied() || reqs[1].Denied() || !reqs[2].Denied() {
		t.Errorf("denied: %v %v %v, want only the pods/log get", reqs[0].Denied(), reqs[1].Denied(), reqs[2].Denied())
	}
}

// TestUnused: a grant no request used is reported unless excepted; a
// refused request uses nothing; an exception for a grant the role lacks is
// reported, and one whose grant was used is told apart.
func TestUnused(t *testing.T) {
	reqs, err := ReadAudit(strings.NewReader(auditLines))
	if err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"r"}, Verbs: []string{"bind"}},
	}
	exceptions := map[Permission]string{
		{Resource: "secrets", Verb: "list"}:                                          "the cache",
		{Resource: "secrets", Verb: "watch"}:                                         "stale",
		{Resource: "configmaps", Verb: "get"}:                                        "not granted",
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind"}: "no name: not the grant",
	}
	unused, unknown, usedAnyway := Unused(rules, reqs, exceptions)
	str := func(ps []Permission) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.String())
		}
		return strings.Join(s, "; ")
	}
	if got, want := str(unused), "bind clusterroles.rbac.authorization.k8s.io named r; delete jobs.batch; get pods/log"; got != want {
		t.Errorf("unused: %s, want %s", got, want)
	}
	if got, want := str(unknown), "bind clusterroles.rbac.authorization.k8s.io; get configmaps"; got != want {
		t.Errorf("unknown exceptions: %s, want %s", got, want)
	}
	if got, want := str(usedAnyway), "watch secrets"; got != want {
		t.Errorf("excepted but used: %s, want %s", got, want)
	}
}
