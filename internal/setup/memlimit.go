package setup

import (
	"errors"
	"math"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/klog/v2"
)

// The environment variables of the Go soft memory limit: GOMEMLIMIT (the
// Go runtime's own) and AUTOMEMLIMIT (the share of the container's limit,
// or "off").
const (
	GoMemLimitEnv   = "GOMEMLIMIT"
	AutoMemLimitEnv = "AUTOMEMLIMIT"
)

// goMemoryLimitRatio is the share of the container's memory limit the Go
// runtime's soft memory limit is set to: the rest is room for memory the
// runtime does not manage (the binary's mapped pages) and for the
// collector to catch up.
const goMemoryLimitRatio = 0.9

// setGoMemoryLimit sets the Go runtime's soft memory limit (GOMEMLIMIT) to
// 90 % of the memory limit limits reports, the container's (its cgroup's)
// in the manager. Without a soft limit the collector lets the heap grow to
// twice what is live before it runs (GOGC=100), so a bring-up that briefly
// holds more than usual can take the process past its limit and get it
// killed; with it, the collector runs more often as the heap nears the
// limit. GOMEMLIMIT set in the environment wins; AUTOMEMLIMIT sets another
// share (above 0, at most 1) or, "off", none; a process with no limit
// keeps the default. It returns the limit in force.
func setGoMemoryLimit(limits memlimit.Provider) int64 {
	limit, err := memlimit.Set(memlimit.WithProvider(limits), memlimit.WithRatio(goMemoryLimitRatio))
	switch {
	case err != nil && !errors.Is(err, memlimit.ErrNoCgroup):
		klog.InfoS("The Go memory limit was not set from the container's memory limit", "err", err.Error())
	case os.Getenv(GoMemLimitEnv) != "":
		klog.InfoS("Go memory limit from GOMEMLIMIT", "bytes", limit)
	case err == nil && limit > 0 && limit < math.MaxInt64:
		klog.InfoS("Go memory limit set from the container's memory limit", "bytes", limit)
	}
	return limit
}
