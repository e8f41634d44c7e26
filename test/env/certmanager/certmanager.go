package certmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// Version is the cert-manager release the local environment installs: the
// version hack/tools/certmanager pins, and the version clusterctl's
// configuration names.
const Version = "v1.21.2"

// Namespace is where the manifest installs cert-manager (and where
// clusterctl looks for it).
const Namespace = "cert-manager"

// Component is one of cert-manager's three programs.
type Component string

const (
	Controller Component = "controller"
	Webhook    Component = "webhook"
	CAInjector Component = "cainjector"
)

// Components are the programs the manifest runs, one Deployment each.
var Components = []Component{Controller, Webhook, CAInjector}

// Binary returns the path of the component's static binary in CAPTF's tool
// cache (hack/tools/install.sh certmanager), building it on first use.
func Binary(c Component) (string, error) {
	return tools.Path("cert-manager-" + string(c))
}

// Entrypoint is where the binary lives in the component's image and what
// the image runs: the paths of cert-manager's published images.
func Entrypoint(c Component) string {
	return "/app/cmd/" + string(c) + "/" + string(c)
}

// Repo is the repository and tag the component's image is pushed under in a
// registry: cert-manager/cert-manager-<component>:<Version>, the release's
// quay.io/jetstack/cert-manager-<component> under a cert-manager/ prefix.
func Repo(c Component) string {
	return "cert-manager/cert-manager-" + string(c) + ":" + Version
}

// ReleaseImage is the image the released manifest names for the component.
func ReleaseImage(c Component) string {
	return "quay.io/jetstack/cert-manager-" + string(c) + ":" + Version
}

// nonRoot is the user of cert-manager's base image (distroless nonroot);
// the chart's Deployments require a non-root user.
const nonRoot = "65532"

// Image builds the component's image: its static binary at Entrypoint,
// owned by root and run as user 65532, on an otherwise empty root.
func Image(c Component) (v1.Image, error) {
	bin, err := Binary(c)
	if err != nil {
		return nil, err
	}
	img, err := imagebuild.Build(imagebuild.Spec{
		Platform: v1.Platform{OS: "linux", Architecture: goruntime.GOARCH},
		Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
			{Path: Entrypoint(c), Mode: 0o755, Source: bin},
			{Path: "/tmp", Mode: 0o1777 | os.ModeDir},
		}}},
		User:       nonRoot,
		Entrypoint: []string{Entrypoint(c)},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "cert-manager-" + string(c),
			"org.opencontainers.image.version": Version,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("build the cert-manager %s image: %w", c, err)
	}
	return img, nil
}

// Images maps each component to its image reference.
type Images map[Component]string

// PushFunc pushes img under repo (with its tag) and returns the digest
// reference; env.Env.PushImage is one.
type PushFunc func(ctx context.Context, repo string, img v1.Image) (string, error)

// PushImages builds the three images and pushes each under Repo.
func PushImages(ctx context.Context, push PushFunc) (Images, error) {
	refs := Images{}
	for _, c := range Components {
		img, err := Image(c)
		if err != nil {
			return nil, err
		}
		ref, err := push(ctx, Repo(c), img)
		if err != nil {
			return nil, fmt.Errorf("push the cert-manager %s image: %w", c, err)
		}
		refs[c] = ref
	}
	return refs, nil
}

// ReleaseManifest returns cert-manager.yaml as cert-manager's release
// renders it from its chart, with the release's image references
// (hack/tools/install.sh certmanager-manifest).
func ReleaseManifest() ([]byte, error) {
	dir, err := tools.Dir("certmanager-manifest")
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, "cert-manager.yaml"))
}

// Manifest returns the release manifest with every container of the three
// Deployments running the given image instead of the release's. Every
// component must have an image; a Deployment container that runs none of
// the release's images is an error, so a chart change cannot slip an
// unreachable image past it.
func Manifest(images Images) ([]byte, error) {
	raw, err := ReleaseManifest()
	if err != nil {
		return nil, err
	}
	return SetImages(raw, images)
}

// SetImages rewrites the container images of a cert-manager manifest, as
// Manifest does.
func SetImages(manifest []byte, images Images) ([]byte, error) {
	byRelease := map[string]Component{}
	for _, c := range Components {
		if images[c] == "" {
			return nil, fmt.Errorf("no image for the cert-manager %s", c)
		}
		byRelease[ReleaseImage(c)] = c
	}
	objs, err := Decode(manifest)
	if err != nil {
		return nil, err
	}
	seen := map[Component]bool{}
	var out bytes.Buffer
	for i := range objs {
		obj := &objs[i]
		if obj.GetKind() == "Deployment" {
			for _, field := range []string{"initContainers", "containers"} {
				path := []string{"spec", "template", "spec", field}
				containers, _, err := unstructured.NestedSlice(obj.Object, path...)
				if err != nil {
					return nil, fmt.Errorf("the Deployment %s: %w", obj.GetName(), err)
				}
				for j, ctr := range containers {
					m, _ := ctr.(map[string]any)
					image, _ := m["image"].(string)
					c, ok := byRelease[image]
					if !ok {
						return nil, fmt.Errorf("the Deployment %s runs %q, which is not a cert-manager %s image", obj.GetName(), image, Version)
					}
					m["image"] = images[c]
					containers[j] = m
					seen[c] = true
				}
				if len(containers) > 0 {
					if err := unstructured.SetNestedSlice(obj.Object, containers, path...); err != nil {
						return nil, err
					}
				}
			}
		}
		doc, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	for _, c := range Components {
		if !seen[c] {
			return nil, fmt.Errorf("the manifest has no Deployment running the cert-manager %s", c)
		}
	}
	return out.Bytes(), nil
}

// Decode splits a multi-document YAML manifest into objects, skipping
// empty documents.
func Decode(manifest []byte) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode the manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, unstructured.Unstructured{Object: m})
	}
}
