package decide

import (
	"strconv"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// fuzzObservation builds a valid Observation from fuzzed values. flags
// carries one bit per boolean fact; jobs is decoded 8 bytes per record.
func fuzzObservation(kind uint8, flags uint64, offsets [4]int32, pending int, membership, driftOwn, driftDef int32,
	limits uint16, serial, lastRestored int64, jobs []byte, uid, current, state string) Observation {
	bit := func(i uint) bool { return flags&(1<<i) != 0 }
	at := func(off int32, zero bool) time.Time {
		if zero {
			return time.Time{}
		}
		return t0.Add(time.Duration(off) * time.Second)
	}
	states := [...]StateStatus{StateNotFound, StateRead, StateUnreadable}
	inputs := [...]InputsStatus{InputsBuilt, InputsNotRendered, InputsWaiting, InputsTooLarge}
	healths := [...]HealthState{HealthNone, HealthPending, HealthRunning, HealthDegraded, HealthStopped, HealthTerminated, HealthUnknown}
	hashes := [...]string{hashA, hashB, "", current}

	o := Observation{
		Kind:                             v1alpha1.WorkloadKinds()[int(kind)%len(v1alpha1.WorkloadKinds())],
		Name:                             "obj",
		UID:                              uid,
		Now:                              t0,
		JobCacheStale:                    bit(0),
		Paused:                           bit(1),
		JobPolicyInvalid:                 bit(2),
		Deleting:                         bit(3),
		DependentsExist:                  bit(4),
		State:                            states[(flags>>5)%3],
		StateInputsHash:                  state,
		EverApplied:                      bit(7),
		Provisioned:                      bit(8),
		Inputs:                           inputs[(flags>>9)%4],
		CurrentInputsHash:                current,
		DurableInputsHash:                hashes[(flags>>11)%4],
		DurableInputsMissing:             bit(13),
		InterruptedApply:                 bit(14),
		ApplyPolicy:                      [...]ApplyPolicy{"", ApplyAutomatic, ApplyManual, ApplyManual}[(flags>>15)%4],
		History:                          HistoryLimits{Successful: int(limits & 0xff % 8), Failed: int(limits >> 8 % 8)},
		Drift:                            DriftSettings{ManagerDefault: time.Duration(offsets[3]) * time.Second},
		DriftFound:                       bit(17),
		LastApply:                        at(offsets[0], bit(18)),
		LastRefresh:                      at(offsets[1], bit(19)),
		LastDriftCheck:                   at(offsets[2], bit(20)),
		Health:                           healths[(flags>>21)%7],
		PendingRefreshes:                 pending,
		MembershipConverging:             bit(24),
		MembershipRefreshIntervalSeconds: membership,
		Remediation:                      RemediationSettings{AnnotateMachine: bit(25), HealthCheckIntervalSeconds: membership},
		LastRestoredSerial:               lastRestored,
	}
	o.Caps = o.Kind.Capabilities()
	if bit(26) {
		o.Drift.Action = DriftRemediate
	}
	if bit(27) {
		o.Drift.IntervalSeconds = &driftOwn
	}
	if bit(28) {
		o.Drift.DefaultsIntervalSeconds = &driftDef
	}
	if bit(29) {
		o.ActiveJob = &ActiveJob{Name: "a", Op: OpApply}
	}
	if bit(30) {
		o.Restore = &RestoreRequest{Serial: serial, BackupFound: bit(31)}
	}
	if bit(32) {
		o.OwnerWait = "WaitingForOwner"
	}
	if bit(33) {
		o.CredentialsWait = "MirrorPending"
	}
	if bit(34) {
		o.AbandonInfrastructure = uid
	}
	if bit(35) {
		o.ApproveDestructivePlan = hashes[(flags>>36)%4]
	}
	if bit(38) {
		o.Plan = &PlanPreview{InputsHash: hashes[(flags>>39)%4], PlanHash: planHash, NoChanges: bit(41)}
	}
	if bit(42) {
		o.ApprovePlan = planHash
	}
	for i := 0; i+8 <= len(jobs) && len(o.Jobs) < 64; i += 8 {
		b := jobs[i : i+8]
		f := b[5]
		o.Jobs = append(o.Jobs, JobRecord{
			Name:             string(rune('a'+b[0]%26)) + strconv.Itoa(i),
			Op:               jobOps[int(b[0])%len(jobOps)],
			Attempt:          int(b[1]) | int(b[2])<<8,
			Finished:         t0.Add(-time.Duration(int16(uint16(b[3])|uint16(b[4])<<8)) * time.Second),
			Succeeded:        f&1 != 0,
			DeadlineExceeded: f&2 != 0,
			Interrupted:      f&4 != 0,
			Blocked:          f&8 != 0,
			PlanChanged:      f&16 != 0,
			PlanUnreadable:   f&32 != 0,
			DriftRemediation: f&64 != 0,
			DriftDetected:    f&128 != 0,
			RestoreSerial:    int64(b[6] % 4),
			InputsHash:       hashes[b[7]%4],
		})
	}
	return o
}

// FuzzDecide checks that a decision never panics, never requeues into the
// past, and is always well formed, whatever facts it is given.
func FuzzDecide(f *testing.F) {
	type seed struct {
		kind                 uint8
		flags                uint64
		o0, o1, o2, o3       int32
		pending              int
		membership, own, def int32
		limits               uint16
		serial, lastRestored int64
		jobs                 []byte
		uid, current, state  string
	}
	apply := []byte{0, 1, 0, 0x10, 0x0e, 1, 0, 0}   // apply a1 succeeded 1h ago
	failed := []byte{0, 2, 0, 20, 0, 0, 0, 1}       // apply a2 failed 20s ago
	drift := []byte{4, 3, 0, 0x2c, 0x01, 129, 0, 0} // drift a3 succeeded with drift 5m ago
	for _, s := range []seed{
		{0, 1<<5 | 1<<8 | 1<<7, -7200, -10, -300, 1800, 0, 0, 0, 0, 0x0303, 0, 0, apply, testUID, hashA, hashA},
		{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0303, 0, 0, nil, testUID, hashA, ""},
		{2, 1<<5 | 1<<8 | 1<<24 | 1<<21, -60, -40, -3000, 0, 3, 15, 0, 0, 0x0000, 0, 0, append(apply, failed...), "u", hashB, hashA},
		{0, 1<<5 | 1<<8 | 1<<26 | 1<<17 | 1<<15 | 1<<38, -7200, -10, -300, 0, 0, 0, 0, 0, 0x0101, 0, 0, append(apply, drift...), testUID, hashA, hashA},
		{0, 1<<3 | 1<<7 | 1<<30 | 1<<31 | 1<<34, 0, 0, 0, 0, 0, 0, 0, 0, 0x0303, 7, 7, nil, testUID, "", ""},
		{1, 1<<5 | 1<<8 | 1<<25 | 1<<27, -100, -400, -1, 0, 9, 60, 0, 0, 0x0505, 0, 0, failed, "", hashA, hashA},
		{2, ^uint64(0), -1 << 31, 1<<31 - 1, 0, -5, -1, -1, -1, -1, 0xffff, -1, -1, []byte{255, 255, 255, 255, 255, 255, 255, 255}, "x", "", "y"},
	} {
		f.Add(s.kind, s.flags, s.o0, s.o1, s.o2, s.o3, s.pending, s.membership, s.own, s.def, s.limits, s.serial, s.lastRestored, s.jobs, s.uid, s.current, s.state)
	}
	f.Fuzz(func(t *testing.T, kind uint8, flags uint64, o0, o1, o2, o3 int32, pending int, membership, own, def int32,
		limits uint16, serial, lastRestored int64, jobs []byte, uid, current, state string) {
		o := fuzzObservation(kind, flags, [4]int32{o0, o1, o2, o3}, pending, membership, own, def, limits, serial, lastRestored, jobs, uid, current, state)
		d, err := Decide(o)
		if err != nil {
			t.Fatalf("valid observation rejected: %v", err)
		}
		if d.RequeueAfter < 0 {
			t.Fatalf("negative requeue %v for %+v", d.RequeueAfter, d)
		}
		if d.Reason == "" {
			t.Fatalf("decision without a reason: %+v", d)
		}
		switch d.Op {
		case OpNone, OpDropFinalizer:
			if d.Job != nil {
				t.Fatalf("%s with a Job plan", d.Op)
			}
		case OpApply, OpDestroy, OpPlan, OpRefresh, OpDrift, OpRestore:
			if d.Job == nil || d.Job.Attempt < 1 || len(d.Job.Name) > MaxJobNameLength || d.RequeueAfter != RequeueJobRunning {
				t.Fatalf("%s with plan %+v requeue %v", d.Op, d.Job, d.RequeueAfter)
			}
		default:
			t.Fatalf("unknown operation %q", d.Op)
		}
		if (o.JobCacheStale || o.ActiveJob != nil || o.Paused) && d.Op != OpNone {
			t.Fatalf("%s started while waiting", d.Op)
		}
		if o.Deleting && (d.Op == OpApply || d.Op == OpPlan || d.Op == OpRefresh || d.Op == OpDrift) {
			t.Fatalf("%s while deleting", d.Op)
		}
		if d.Op == OpPlan && o.Kind != v1alpha1.KindTerraformCluster {
			t.Fatalf("plan for a %s", o.Kind)
		}
		// Pruning never drops an operation's newest success, nor (while no
		// success is newer) its newest counted failure.
		h := summarize(o.Jobs)
		for _, p := range Prune(o.Jobs, o.History) {
			if s := h.newestSuccess(p.Op); s != nil && s.Name == p.Name {
				t.Fatalf("pruned the newest %s success %s", p.Op, p.Name)
			}
			if i := h.op(p.Op).newestFailure; i >= 0 && o.Jobs[i].Name == p.Name {
				t.Fatalf("pruned the newest unresolved %s failure %s", p.Op, p.Name)
			}
		}
	})
}
