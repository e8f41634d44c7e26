package inputs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// liveObject is what the reconcile flow sees of a Terraform* object and its
// owners: everything on the Kubernetes side, hashed or not.
type liveObject struct {
	UID             string
	Generation      int64
	Labels          map[string]string
	Annotations     map[string]string
	Image           string
	ImagePullPolicy string
	ResolvedDigest  string
	Sources         []Source
	Inline          []byte
	Inputs          RoleInputs
}

// request builds the render request the way the reconcile flow does: from
// spec.source.image as written, the role inputs (captf.io/template from the
// cloned-from-name annotation) and the resolved variables. Nothing else of
// the object is read.
func (o liveObject) request(t *testing.T) Request {
	t.Helper()
	vars, err := ResolveVariables(o.Inputs.Role(), o.Sources, o.Inline)
	if err != nil {
		t.Fatalf("ResolveVariables: %v", err)
	}
	setCommon(o.Inputs, func(c *Common) { c.Template = o.Annotations[ClonedFromNameAnnotation] })
	return Request{Image: o.Image, Inputs: o.Inputs, Variables: vars}
}

func setCommon(in RoleInputs, f func(*Common)) {
	switch t := in.(type) {
	case *ClusterInputs:
		f(&t.Common)
	case *MachineInputs:
		f(&t.Common)
	case *MachinePoolInputs:
		f(&t.Common)
	}
}

func baseObject(in RoleInputs) liveObject {
	return liveObject{
		UID:             "0c1f7a52-0000-4000-8000-000000000001",
		Generation:      3,
		Labels:          map[string]string{"cluster.x-k8s.io/cluster-name": "prod"},
		Annotations:     map[string]string{ClonedFromNameAnnotation: "workers-v1"},
		Image:           bookImage,
		ImagePullPolicy: "IfNotPresent",
		ResolvedDigest:  "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Sources: []Source{
			ConfigMapSource("sizing", FormatString, false, map[string]string{"instance_type": "m6i.large"}, nil),
			SecretSource("db", FormatJSON, false, map[string][]byte{"db": []byte(`{"user":"app","port":5432}`)}),
		},
		Inline: []byte(`{"root_volume_gib": 100}`),
		Inputs: in,
	}
}

func hashOf(t *testing.T, o liveObject) string {
	t.Helper()
	return mustRender(t, o.request(t)).Hash
}

type mutation struct {
	name  string
	moves bool
	// input is the contract input the mutation changes, "" for none.
	input string
	apply func(o *liveObject)
}

func commonMutations() []mutation {
	return []mutation{
		{"metadata_uid_does_not_move_the_hash", false, "", func(o *liveObject) { o.UID = "ffffffff-0000-4000-8000-000000000002" }},
		{"metadata_generation_does_not_move_the_hash", false, "", func(o *liveObject) { o.Generation++ }},
		{"metadata_labels_do_not_move_the_hash", false, "", func(o *liveObject) { o.Labels = map[string]string{"team": "b"} }},
		{"metadata_annotations_other_than_cloned_from_do_not_move_the_hash", false, "", func(o *liveObject) {
			o.Annotations["clusterctl.cluster.x-k8s.io/block-move"] = ""
		}},
		{"pull_policy_does_not_move_the_hash", false, "", func(o *liveObject) { o.ImagePullPolicy = "Always" }},
		{"resolved_digest_does_not_move_the_hash", false, "", func(o *liveObject) {
			o.ResolvedDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
		}},
		{"map_order_does_not_move_the_hash", false, "", func(o *liveObject) {
			o.Inline = []byte(`{ "root_volume_gib" : 100 }`)
		}},
		{"image_tag_moves_the_hash", true, "", func(o *liveObject) { o.Image = "ghcr.io/example/noop:v1.0.1" }},
		{"image_written_as_digest_moves_the_hash", true, "", func(o *liveObject) {
			o.Image = "ghcr.io/example/noop@" + o.ResolvedDigest
		}},
		{"a_variable_value_moves_the_hash", true, "", func(o *liveObject) { o.Inline = []byte(`{"root_volume_gib": 200}`) }},
		{"a_variable_from_a_source_moves_the_hash", true, "", func(o *liveObject) {
			o.Sources[0] = ConfigMapSource("sizing", FormatString, false, map[string]string{"instance_type": "m6i.xlarge"}, nil)
		}},
		{"secret_vs_configmap_source_switch_moves_the_hash", true, "", func(o *liveObject) {
			o.Sources[0] = SecretSource("sizing", FormatString, false, map[string][]byte{"instance_type": []byte("m6i.large")})
		}},
		{"string_vs_json_format_moves_the_hash", true, "", func(o *liveObject) {
			o.Sources[1] = SecretSource("db", FormatString, false, map[string][]byte{"db": []byte(`{"user":"app","port":5432}`)})
		}},
		{"cloned_from_name_moves_the_hash_through_captf_tags", true, contract.InputTags, func(o *liveObject) {
			o.Annotations[ClonedFromNameAnnotation] = "workers-v2"
		}},
		{"captf_cluster_moves_the_hash", true, contract.InputCluster, func(o *liveObject) {
			setCommon(o.Inputs, func(c *Common) { c.Cluster.Name = "prod-2" })
		}},
		{"captf_object_moves_the_hash", true, contract.InputObject, func(o *liveObject) {
			setCommon(o.Inputs, func(c *Common) { c.Object.Name += "-2" })
		}},
	}
}

func roleMutations(role contract.Role) []mutation {
	switch role {
	case contract.RoleCluster:
		c := func(o *liveObject) *ClusterInputs { return o.Inputs.(*ClusterInputs) }
		return []mutation{
			{"control_plane_endpoint_moves_the_hash", true, contract.InputControlPlaneEndpoint, func(o *liveObject) {
				c(o).ControlPlaneEndpoint = &contract.Endpoint{Host: "api2.prod.example.com", Port: 6443}
			}},
			{"kubernetes_version_moves_the_hash", true, contract.InputKubernetesVersion, func(o *liveObject) { c(o).KubernetesVersion = "v1.36.3" }},
			{"control_plane_initialized_moves_the_hash", true, contract.InputControlPlaneInitialized, func(o *liveObject) { c(o).ControlPlaneInitialized = false }},
			{"cluster_network_moves_the_hash", true, contract.InputClusterNetwork, func(o *liveObject) { c(o).ClusterNetwork.ServiceDomain = "corp.local" }},
		}
	case contract.RoleMachine:
		m := func(o *liveObject) *MachineInputs { return o.Inputs.(*MachineInputs) }
		return []mutation{
			{"captf_cluster_outputs_moves_the_hash", true, contract.InputClusterOutputs, func(o *liveObject) {
				m(o).ClusterOutputs = json.RawMessage(`{"network_id":"net-2"}`)
			}},
			{"captf_cluster_outputs_member_order_does_not_move_the_hash", false, "", func(o *liveObject) {
				m(o).ClusterOutputs = json.RawMessage(`{"note":"a\u003cb & c>d","network_id":"net-1"}`)
			}},
			{"machine_name_moves_the_hash", true, contract.InputMachineName, func(o *liveObject) { m(o).MachineName += "x" }},
			{"bootstrap_data_moves_the_hash", true, contract.InputBootstrapData, func(o *liveObject) { m(o).BootstrapData = []byte("#cloud-config\n") }},
			{"bootstrap_format_moves_the_hash", true, contract.InputBootstrapFormat, func(o *liveObject) { m(o).BootstrapFormat = "ignition" }},
			{"failure_domain_moves_the_hash", true, contract.InputFailureDomain, func(o *liveObject) { m(o).FailureDomain = "fd-a" }},
			{"kubernetes_version_moves_the_hash", true, contract.InputKubernetesVersion, func(o *liveObject) { m(o).KubernetesVersion = "" }},
			{"control_plane_moves_the_hash", true, contract.InputControlPlane, func(o *liveObject) { m(o).ControlPlane = true }},
		}
	default:
		p := func(o *liveObject) *MachinePoolInputs { return o.Inputs.(*MachinePoolInputs) }
		return []mutation{
			{"captf_cluster_outputs_moves_the_hash", true, contract.InputClusterOutputs, func(o *liveObject) {
				p(o).ClusterOutputs = json.RawMessage(`{"network_id":"net-2"}`)
			}},
			{"machinepool_name_moves_the_hash", true, contract.InputMachinePoolName, func(o *liveObject) { p(o).MachinePoolName += "x" }},
			{"replicas_without_autoscaling_moves_the_hash", true, contract.InputReplicas, func(o *liveObject) { p(o).Replicas = 0 }},
			{"bootstrap_data_rotation_moves_the_hash", true, contract.InputBootstrapData, func(o *liveObject) { p(o).BootstrapData = []byte("#cloud-config\ntoken: b") }},
			{"bootstrap_format_moves_the_hash", true, contract.InputBootstrapFormat, func(o *liveObject) { p(o).BootstrapFormat = "ignition" }},
			{"node_labels_moves_the_hash", true, contract.InputNodeLabels, func(o *liveObject) { p(o).NodeLabels = map[string]string{"tier": "a"} }},
			{"failure_domains_moves_the_hash", true, contract.InputFailureDomains, func(o *liveObject) { p(o).FailureDomains = []string{"fd-a"} }},
			{"cluster_failure_domains_moves_the_hash", true, contract.InputClusterFailureDomains, func(o *liveObject) { p(o).ClusterFailureDomains = nil }},
			{"kubernetes_version_moves_the_hash", true, contract.InputKubernetesVersion, func(o *liveObject) { p(o).KubernetesVersion = "v1.37.0" }},
			{"autoscaling_moves_the_hash", true, contract.InputAutoscaling, func(o *liveObject) {
				p(o).Autoscaling = Autoscaling{Enabled: true, Min: 1, Max: 5}
			}},
		}
	}
}

func freshInputs(role contract.Role) RoleInputs {
	switch role {
	case contract.RoleCluster:
		return bookCluster()
	case contract.RoleMachine:
		return bookMachine()
	}
	return bookPool()
}

func TestHashMovesOnlyOnTheHashedSet(t *testing.T) {
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			base := hashOf(t, baseObject(freshInputs(role)))
			covered := map[string]bool{contract.InputContract: true} // a constant of the release
			for _, m := range append(commonMutations(), roleMutations(role)...) {
				t.Run(m.name, func(t *testing.T) {
					o := baseObject(freshInputs(role))
					m.apply(&o)
					got := hashOf(t, o)
					if moved := got != base; moved != m.moves {
						t.Errorf("hash moved = %v, want %v", moved, m.moves)
					}
				})
				if m.input != "" {
					covered[m.input] = true
				}
			}
			for _, name := range role.InputNames() {
				if !covered[name] {
					t.Errorf("no case shows that a change of input %s moves the hash", name)
				}
			}
		})
	}
}

func TestHash_ReplicasExcludedWhileAutoscaling(t *testing.T) {
	auto := func(replicas int32) string {
		p := bookPool()
		p.Autoscaling = Autoscaling{Enabled: true, Min: 1, Max: 10}
		p.Replicas = replicas
		return mustRender(t, Request{Image: bookImage, Inputs: p}).Hash
	}
	if auto(3) != auto(7) {
		t.Error("with autoscaling enabled, a replicas change moved the hash")
	}
	p := bookPool()
	p.Autoscaling = Autoscaling{Enabled: true, Min: 1, Max: 10}
	p.Replicas = 7
	r := mustRender(t, Request{Image: bookImage, Inputs: p})
	if !strings.Contains(string(r.TFVars), `"replicas": 7`) {
		t.Error("replicas is excluded from the hash but must still be rendered")
	}
}

func TestHash_ObjectWithoutVariablesKeepsItsHash(t *testing.T) {
	// "an object without variables keeps exactly the hash it had before
	// variables existed": an empty variable set hashes like none at all.
	for _, in := range []RoleInputs{bookCluster(), bookMachine(), bookPool()} {
		none := mustRender(t, Request{Image: bookImage, Inputs: in}).Hash
		empty, err := ResolveVariables(in.Role(), []Source{MissingSource(SourceConfigMap, "later", true)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustRender(t, Request{Image: bookImage, Inputs: in, Variables: empty}).Hash; got != none {
			t.Errorf("%s: an object with no variables hashes %s, want %s", in.Role(), got, none)
		}
		one := Variables{Values: map[string]any{"x": "1"}}
		if got := mustRender(t, Request{Image: bookImage, Inputs: in, Variables: one}).Hash; got == none {
			t.Errorf("%s: setting a variable did not move the hash", in.Role())
		}
	}
}

func TestHash_RequestCarriesOnlyTheHashedSet(t *testing.T) {
	// Object metadata, the pull policy and the resolved digest have no way
	// into a render: neither Request nor any role's inputs has a field for
	// them.
	forbidden := []string{"uid", "generation", "label", "annotation", "pullpolicy", "digest", "resourceversion"}
	var walk func(t reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Name == "NodeLabels" { // the pool's node_labels input, from the template's labels
				continue
			}
			for _, bad := range forbidden {
				if strings.Contains(strings.ToLower(f.Name), bad) {
					t.Errorf("%s.%s looks like object metadata in the hashed set", path, f.Name)
				}
			}
			walk(f.Type, path+"."+f.Name)
		}
	}
	walk(reflect.TypeFor[Request](), "Request")
	for _, in := range []RoleInputs{&ClusterInputs{}, &MachineInputs{}, &MachinePoolInputs{}} {
		walk(reflect.TypeOf(in), reflect.TypeOf(in).Elem().Name())
	}
}

func TestHash_StableAcrossMapOrder(t *testing.T) {
	in := bookPool()
	want := ""
	for i := range 50 {
		labels := map[string]string{}
		for j := range 20 {
			k := (i + j) % 20
			labels[string(rune('a'+k))+"-label"] = "v"
		}
		in.NodeLabels = labels
		h := mustRender(t, Request{Image: bookImage, Inputs: in}).Hash
		if want == "" {
			want = h
		} else if h != want {
			t.Fatalf("iteration %d: hash %s differs from %s", i, h, want)
		}
	}
}

func TestHash_FractionalNumberIsAnErrorNamingThePath(t *testing.T) {
	m := bookMachine()
	m.ClusterOutputs = json.RawMessage(`{"sizes": {"ratio": 0.5}}`)
	_, err := Render(Request{Image: bookImage, Inputs: m})
	var ue *UnhashableError
	if !asErr(err, &ue) {
		t.Fatalf("err = %v, want *UnhashableError", err)
	}
	if !ue.ClusterOutputs() || !strings.Contains(ue.Path, "captf_cluster_outputs.sizes.ratio") {
		t.Errorf("error %v does not name captf_cluster_outputs.sizes.ratio", err)
	}
	if strings.Contains(err.Error(), "0.5") {
		t.Errorf("error carries the value: %v", err)
	}
	m.ClusterOutputs = json.RawMessage(`{"big": 1e3}`)
	if _, err := Render(Request{Image: bookImage, Inputs: m}); !asErr(err, &ue) {
		t.Errorf("an exponent number must be refused, err = %v", err)
	}
}
