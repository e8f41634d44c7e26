package setup

import "runtime/debug"

// Version and Commit identify the build; set them with
// -ldflags "-X github.com/captf-io/cluster-api-provider-terraform/internal/setup.Version=<v> -X ….Commit=<sha>".
// Unset, they come from the Go build information.
var (
	Version = ""
	Commit  = ""
)

// BuildVersion returns the manager's version.
func BuildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// BuildCommit returns the commit the manager was built from ("" when
// unknown).
func BuildCommit() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
