// Package testimage builds the small OCI image the local environment's tests
// run in pods: a static build of test/env/testdata/podprog at
// /captf/bin/podprog, with no entrypoint (pods give the command), user 65532.
package testimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/registry"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// ProgramPath is where the program sits in the image.
const ProgramPath = "/captf/bin/podprog"

// UID is the image's user.
const UID = 65532

var (
	once   sync.Once
	binary []byte
	errB   error
)

// Program returns the static podprog binary, built once per process.
func Program() ([]byte, error) {
	once.Do(func() {
		dir, err := os.MkdirTemp("", "podprog-")
		if err != nil {
			errB = fmt.Errorf("failed to create build folder: %w", err)
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "podprog")
		if err := tools.Build(context.Background(), "./test/env/testdata/podprog", out, "CGO_ENABLED=0"); err != nil {
			errB = fmt.Errorf("failed to build podprog: %w", err)
			return
		}
		binary, errB = os.ReadFile(out)
	})
	return binary, errB
}

// Image returns the podprog image.
func Image() (v1.Image, error) {
	bin, err := Program()
	if err != nil {
		return nil, err
	}
	return registry.FilesImage([]registry.File{
		{Path: ProgramPath, Data: bin, Mode: 0o755},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/captf/work", Dir: true, Mode: 0o755, UID: UID, GID: UID},
	}, v1.Config{
		User:       "65532",
		WorkingDir: "/captf",
		Env:        []string{"PATH=/captf/bin:/usr/bin:/bin", "PODPROG_IMAGE=1"},
	})
}
