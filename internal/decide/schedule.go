package decide

import (
	"math/bits"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Schedule intervals (book: The Reconcile Lifecycle, Drift and Health,
// Machine Pools, Machine Remediation).
const (
	// DefaultDriftInterval is --drift-default-interval's default, and the
	// interval used when the manager's value is zero or negative.
	DefaultDriftInterval = 30 * time.Minute
	// MembershipConvergeInterval is a pool's refresh cadence while its
	// membership converges or its health reads pending.
	MembershipConvergeInterval = 30 * time.Second
	// DefaultMembershipRefreshInterval is a pool's
	// membershipRefreshIntervalSeconds when unset or 0.
	DefaultMembershipRefreshInterval = 60 * time.Second
	// DefaultHealthCheckInterval is a machine's
	// remediation.healthCheckIntervalSeconds when unset.
	DefaultHealthCheckInterval = 300 * time.Second
	// PendingRefreshBase and PendingRefreshCap bound the refresh backoff of a
	// cluster or machine whose health reads pending: 30s, 1m, 2m, 4m, then 5m.
	PendingRefreshBase = 30 * time.Second
	PendingRefreshCap  = 5 * time.Minute
)

// IntervalSource says where an effective drift interval came from.
type IntervalSource string

// The interval sources.
const (
	// SourceObject: the object's own spec.drift.intervalSeconds.
	SourceObject IntervalSource = "Object"
	// SourceClusterDefaults: the owning TerraformCluster's
	// spec.defaults.drift.intervalSeconds.
	SourceClusterDefaults IntervalSource = "ClusterDefaults"
	// SourceManagerDefault: the manager's --drift-default-interval.
	SourceManagerDefault IntervalSource = "ManagerDefault"
)

// DriftInterval is an object's effective drift schedule.
type DriftInterval struct {
	// Enabled is false when drift checks are turned off (interval 0 on a
	// cluster or machine).
	Enabled bool
	// Interval is the interval between checks when Enabled.
	Interval time.Duration
	// Source says which setting decided it.
	Source IntervalSource
}

// EffectiveDriftInterval resolves the drift interval: the object's own
// intervalSeconds, else (a cluster member, a machine or pool; a cluster's
// defaults are never its own) the cluster's
// spec.defaults.drift.intervalSeconds, else the manager default. 0 turns
// drift off for a cluster or machine, whether set on the object or
// inherited; a kind whose drift is always on (a pool) falls back to the
// manager default instead.
func EffectiveDriftInterval(caps v1alpha1.Capabilities, s DriftSettings) DriftInterval {
	manager := DriftInterval{Enabled: true, Interval: s.ManagerDefault, Source: SourceManagerDefault}
	if manager.Interval <= 0 {
		manager.Interval = DefaultDriftInterval
	}
	pick := func(sec int32, src IntervalSource) DriftInterval {
		if sec > 0 {
			return DriftInterval{Enabled: true, Interval: time.Duration(sec) * time.Second, Source: src}
		}
		if caps.DriftAlwaysOn {
			return manager
		}
		return DriftInterval{Enabled: false, Source: src}
	}
	if s.IntervalSeconds != nil {
		return pick(*s.IntervalSeconds, SourceObject)
	}
	if caps.ClusterMember && s.DefaultsIntervalSeconds != nil {
		return pick(*s.DefaultsIntervalSeconds, SourceClusterDefaults)
	}
	return manager
}

// EffectiveDriftAction is the drift action that applies: an immutable
// kind's (a machine's) is always Report, since Cluster API replaces its
// instance rather than a re-apply changing it, and an unset action is
// Report.
func EffectiveDriftAction(caps v1alpha1.Capabilities, a DriftAction) DriftAction {
	if !caps.MutableInputs || a != DriftRemediate {
		return DriftReport
	}
	return DriftRemediate
}

// Jitter is the object's deterministic delay added to an interval: derived
// from its UID alone, in [0, interval/10), so objects created together do
// not all check in lockstep while each keeps a stable cadence.
func Jitter(uid string, interval time.Duration) time.Duration {
	span := interval / 10
	if span <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(uint64(span), uidHash(uid))
	return time.Duration(hi)
}

// uidHash is FNV-1a over the UID, finished with a 64-bit mixer so every bit
// of the result depends on every byte.
func uidHash(uid string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(uid); i++ {
		h ^= uint64(uid[i])
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// PendingRefreshDelay is the delay before the next refresh of a cluster or
// machine after k consecutive pending samples: 30s, 1m, 2m, 4m, then 5m.
func PendingRefreshDelay(k int) time.Duration {
	if k < 1 {
		k = 1
	}
	if k > 5 {
		return PendingRefreshCap
	}
	return min(PendingRefreshBase<<(k-1), PendingRefreshCap)
}

// MembershipRefreshInterval is a pool's membership refresh interval: its
// membershipRefreshIntervalSeconds, 60 s when unset or 0.
func MembershipRefreshInterval(seconds int32) time.Duration {
	if seconds <= 0 {
		return DefaultMembershipRefreshInterval
	}
	return time.Duration(seconds) * time.Second
}

// MembershipConvergeDelay is a pool's refresh cadence while its membership
// converges (or its health reads pending): 30 s, or the membership refresh
// interval when that is shorter.
func MembershipConvergeDelay(membershipSeconds int32) time.Duration {
	return min(MembershipConvergeInterval, MembershipRefreshInterval(membershipSeconds))
}

// HealthCheckInterval is a machine's remediation health-check interval:
// healthCheckIntervalSeconds, 300 s when unset.
func HealthCheckInterval(seconds int32) time.Duration {
	if seconds <= 0 {
		return DefaultHealthCheckInterval
	}
	return time.Duration(seconds) * time.Second
}
