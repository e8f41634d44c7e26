package framework

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
	"sigs.k8s.io/yaml"
)

// Audit is the kube-apiserver audit log of the requests some users send:
// what the API server's authorizer saw of each (user, verb, API group,
// resource, subresource) and what it decided.
type Audit struct {
	// Policy and Log are the audit policy file and the log the API server
	// writes.
	Policy, Log string
}

// NewAudit writes, under dir, a policy that logs the requests of users at
// the Metadata level (who, what, the authorizer's decision; no bodies) and
// nothing else.
func NewAudit(dir string, users ...string) (*Audit, error) {
	if len(users) == 0 {
		return nil, errors.New("audit: no user to record")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := auditv1.Policy{
		// One event per request once it is answered (a watch: once it
		// started streaming as well).
		OmitStages: []auditv1.Stage{auditv1.StageRequestReceived},
		Rules: []auditv1.PolicyRule{
			{Level: auditv1.LevelMetadata, Users: users},
			{Level: auditv1.LevelNone},
		},
	}
	p.APIVersion, p.Kind = auditv1.SchemeGroupVersion.String(), "Policy"
	b, err := yaml.Marshal(p)
	if err != nil {
		return nil, err
	}
	a := &Audit{Policy: filepath.Join(dir, "audit-policy.yaml"), Log: filepath.Join(dir, "audit.log")}
	return a, os.WriteFile(a.Policy, b, 0o600)
}

// APIServerArgs are the kube-apiserver flags that make it write the log
// (env.Options.APIServerArgs). The log backend is blocking: an event is
// written before its response is.
func (a *Audit) APIServerArgs() []string {
	return []string{"--audit-policy-file=" + a.Policy, "--audit-log-path=" + a.Log, "--audit-log-format=json"}
}

// Request is one resource request as the authorizer saw it.
type Request struct {
	User                                  string
	Verb, APIGroup, Resource, Subresource string
	Namespace, Name                       string
	// Code is the response's HTTP status (0 for a watch still open);
	// Decision the authorizer's (allow or forbid), Reason its reason.
	Code             int32
	Decision, Reason string
}

// Permission is the (API group, resource[/subresource], verb) a request
// needs.
func (r Request) Permission() Permission {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return Permission{Group: r.APIGroup, Resource: res, Verb: r.Verb}
}

// Denied reports whether the authorizer refused the request.
func (r Request) Denied() bool { return r.Decision == "forbid" }

func (r Request) String() string {
	s := r.Permission().String()
	switch {
	case r.Namespace != "" && r.Name != "":
		s += " " + r.Namespace + "/" + r.Name
	case r.Namespace != "" || r.Name != "":
		s += " " + r.Namespace + r.Name
	}
	s += fmt.Sprintf(" (%s): %d", r.User, r.Code)
	if r.Reason != "" {
		s += " " + r.Reason
	}
	return s
}

// Requests reads the log: every resource request (discovery and other
// non-resource paths left out), one per audit ID.
func (a *Audit) Requests() ([]Request, error) {
	f, err := os.Open(a.Log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAudit(f)
}

// ReadAudit reads a JSON-lines audit log as Audit.Requests does. A last
// line the API server is still writing is left out.
func ReadAudit(r io.Reader) ([]Request, error) {
	byID := map[string]int{}
	var out []Request
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a partial last line is not an event yet
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if ev.ObjectRef == nil {
			continue
		}
		req := Request{
			User: ev.User.Username, Verb: ev.Verb,
			APIGroup: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name,
			Decision: ev.Annotations["authorization.k8s.io/decision"], Reason: ev.Annotations["authorization.k8s.io/reason"],
		}
		if ev.ImpersonatedUser != nil {
			req.User = ev.ImpersonatedUser.Username
		}
		if ev.ResponseStatus != nil && ev.Stage == auditv1.StageResponseComplete {
			req.Code = ev.ResponseStatus.Code
		}
		// A watch logs when it starts and when it ends: keep the last.
		if i, ok := byID[string(ev.AuditID)]; ok {
			out[i] = req
			continue
		}
		byID[string(ev.AuditID)] = len(out)
		out = append(out, req)
	}
}

// Permission is one (API group, resource[/subresource], verb) grant or use;
// Name is a resource name a grant is limited to ("" for any).
type Permission struct{ Group, Resource, Name, Verb string }

func (p Permission) String() string {
	s := p.Verb + " " + p.Resource
	if p.Group != "" {
		s += "." + p.Group
	}
	if p.Name != "" {
		s += " named " + p.Name
	}
	return s
}

// rule is p as a single-verb, single-resource policy rule.
func (p Permission) rule() rbacv1.PolicyRule {
	r := rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}}
	if p.Name != "" {
		r.ResourceNames = []string{p.Name}
	}
	return r
}

// Grants breaks rules down into single permissions (RBAC's own
// breakdown), sorted.
func Grants(rules []rbacv1.PolicyRule) []Permission {
	seen := map[Permission]bool{}
	var out []Permission
	for _, r := range rules {
		for _, b := range validation.BreakdownRule(r) {
			if len(b.NonResourceURLs) > 0 {
				continue
			}
			p := Permission{Group: b.APIGroups[0], Resource: b.Resources[0], Verb: b.Verbs[0]}
			if len(b.ResourceNames) > 0 {
				p.Name = b.ResourceNames[0]
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Unused compares the grants of rules with the requests used. A request
// uses a grant when RBAC's own comparison says the rule it needed covers
// it (a grant limited to a resource name is used by a request for any
// object of its resource). It returns the grants no request used that
// exceptions does not name; the exceptions that name no grant of rules;
// and the exceptions whose grant was used after all (which, the requests
// being those of a run, may differ from run to run).
func Unused(rules []rbacv1.PolicyRule, used []Request, exceptions map[Permission]string) (unused, unknown, usedAnyway []Permission) {
	var needed []rbacv1.PolicyRule
	seen := map[Permission]bool{}
	for _, r := range used {
		if r.Denied() {
			continue
		}
		p := r.Permission()
		if !seen[p] {
			seen[p] = true
			needed = append(needed, p.rule())
		}
	}
	granted := map[Permission]bool{}
	for _, g := range Grants(rules) {
		granted[g] = true
		probe := g
		probe.Name = ""
		// Covers(owner, servant): the rules the requests needed cover
		// the grant.
		usedNow, _ := validation.Covers(needed, []rbacv1.PolicyRule{probe.rule()})
		_, excepted := exceptions[g]
		switch {
		case usedNow && excepted:
			usedAnyway = append(usedAnyway, g)
		case !usedNow && !excepted:
			unused = append(unused, g)
		}
	}
	for p := range exceptions {
		if !granted[p] {
			unknown = append(unknown, p)
		}
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].String() < unknown[j].String() })
	return unused, unknown, usedAnyway
}

// Summary lists the distinct permissions of requests, with how many
// requests used each, one per line.
func Summary(reqs []Request) string {
	n := map[Permission]int{}
	for _, r := range reqs {
		n[r.Permission()]++
	}
	var lines []string
	for p, c := range n {
		lines = append(lines, fmt.Sprintf("%-60s %d", p, c))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
