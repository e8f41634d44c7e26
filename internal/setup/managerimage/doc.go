// Package managerimage builds CAPTF's manager image without a container
// engine: static (CGO_ENABLED=0) builds of ./cmd/manager and ./cmd/runner
// placed at /manager and /runner, USER 65532, entrypoint /manager, made
// with internal/imagebuild. The same image is the manager's and, through
// --runner-image (CAPTF_MANAGER_IMAGE), the one every Job's init container
// copies /runner from. The local environment builds it and pushes it to its
// loopback registry; hack/manager-image does the same from the command line.
package managerimage
