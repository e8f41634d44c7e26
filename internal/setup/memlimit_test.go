package setup

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// The manager's Go soft memory limit follows its container's memory limit
// (Scale, "Memory"): 90 % of it, unless GOMEMLIMIT is set; no limit, no
// soft limit.
func TestGoMemoryLimitFollowsTheContainer(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	cases := []struct {
		name   string
		env    string
		limits memlimit.Provider
		want   int64
	}{
		{"90 % of the container's limit", "", memlimit.Limit(1 << 30), 966367641},
		{"GOMEMLIMIT set wins", "123MiB", memlimit.Limit(1 << 30), 123 << 20},
		{"no container limit, no soft limit", "", func() (uint64, error) { return 0, memlimit.ErrNoLimit }, math.MaxInt64},
		{"not in a cgroup, no soft limit", "", func() (uint64, error) { return 0, memlimit.ErrNoCgroup }, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("AUTOMEMLIMIT", "off")
			os.Unsetenv("AUTOMEMLIMIT")
			if tc.env != "" {
				t.Setenv("GOMEMLIMIT", tc.env)
				// The runtime reads GOMEMLIMIT at start; a process
				// started with it has that limit in force.
				debug.SetMemoryLimit(tc.want)
			} else {
				t.Setenv("GOMEMLIMIT", "")
			}
			setGoMemoryLimit(tc.limits)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("Go memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
