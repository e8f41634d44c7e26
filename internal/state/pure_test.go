package state

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestNames(t *testing.T) {
	sum := sha256.Sum256([]byte("team-a/TerraformMachinePool/pool-1"))
	want := hex.EncodeToString(sum[:])[:16] + "-mp"
	suffix, err := Suffix("team-a", v1alpha1.KindTerraformMachinePool, "pool-1")
	if err != nil || suffix != want {
		t.Fatalf("Suffix = %q, %v; want %q", suffix, err, want)
	}
	shape := regexp.MustCompile(`^[0-9a-f]{16}-(c|m|mp)$`)
	endsInDigits := regexp.MustCompile(`-[0-9]+$`)
	for _, tc := range []struct {
		name, ns  string
		kind      v1alpha1.WorkloadKind
		obj, code string
	}{
		{"the suffix of a TerraformCluster ends in -c", "ns", v1alpha1.KindTerraformCluster, "c1", "c"},
		{"the suffix of a TerraformMachine ends in -m", "ns", v1alpha1.KindTerraformMachine, "m-1", "m"},
		{"the suffix of a TerraformMachinePool ends in -mp", "ns", v1alpha1.KindTerraformMachinePool, "p-2", "mp"},
		{"an object named like a chunk index still never ends in -<digits>", "ns-1", v1alpha1.KindTerraformMachine, "worker-0123", "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Suffix(tc.ns, tc.kind, tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if !shape.MatchString(s) || !strings.HasSuffix(s, "-"+tc.code) || endsInDigits.MatchString(s) {
				t.Errorf("suffix %q", s)
			}
		})
	}
	t.Run("the suffix derives from namespace, kind and name, never the UID, so it survives a move", func(t *testing.T) {
		a, _ := Suffix("ns", v1alpha1.KindTerraformCluster, "x")
		b, _ := Suffix("ns", v1alpha1.KindTerraformMachine, "x")
		c, _ := Suffix("ns2", v1alpha1.KindTerraformCluster, "x")
		if a == b || a == c {
			t.Errorf("suffixes collide: %s %s %s", a, b, c)
		}
	})
	if _, err := Suffix("ns", "Machine", "x"); err == nil {
		t.Error("a kind without state has no suffix")
	}
	if _, err := Suffix("", v1alpha1.KindTerraformCluster, "x"); err == nil {
		t.Error("a suffix needs a namespace")
	}
	for got, want := range map[string]string{
		SecretName(suffix):             "tfstate-default-" + suffix,
		ChunkName(suffix, 0):           "tfstate-default-" + suffix,
		ChunkName(suffix, 3):           "tfstate-default-" + suffix + "-part-3",
		LockLeaseName(suffix):          "lock-tfstate-default-" + suffix,
		BackupName(suffix, 12):         "captf-state-backup-" + suffix + "-12",
		BackupChunkName(suffix, 12, 0): "captf-state-backup-" + suffix + "-12",
		BackupChunkName(suffix, 12, 2): "captf-state-backup-" + suffix + "-12-part-2",
	} {
		if got != want {
			t.Errorf("name %q, want %q", got, want)
		}
	}
}

func TestChunkIndex(t *testing.T) {
	suffix := "0123456789abcdef-m"
	base := "tfstate-default-" + suffix
	for _, tc := range []struct {
		name  string
		in    string
		index int
		ok    bool
	}{
		{"the base Secret is chunk 0", base, 0, true},
		{"-part-1 is chunk 1", base + "-part-1", 1, true},
		{"-part-31 is chunk 31", base + "-part-31", 31, true},
		{"a leading zero names the same chunk", base + "-part-01", 1, true},
		{"-part-0 is not a chunk name", base + "-part-0", 0, false},
		{"-part- without a number is not a chunk name", base + "-part-", 0, false},
		{"-part-x is not a chunk name", base + "-part-x", 0, false},
		{"another workspace is not a chunk name", "tfstate-other-" + suffix, 0, false},
		{"another suffix is not a chunk name", "tfstate-default-0123456789abcdef-c", 0, false},
		{"a backup is not a chunk name", "captf-state-backup-" + suffix + "-3", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := chunkIndex(suffix, tc.in)
			if n != tc.index || ok != tc.ok {
				t.Errorf("chunkIndex(%q) = %d, %v", tc.in, n, ok)
			}
		})
	}
}

func TestClassifyLock(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	held := func(who string) Lock {
		return Lock{Exists: true, ID: "lock-id-1", Info: &LockInfo{ID: "lock-id-1", Who: who, Operation: "OperationTypeApply", Created: created}}
	}
	job := "captf-m-worker-0-apply-a1-abc123"
	owners := LockOwners{
		Pods: []RunnerPod{{Name: job + "-x7k2p", Exited: true}, {Name: "captf-m-worker-0-drift-a2-def456-q9zzz", Exited: false}},
		Jobs: []string{job, "captf-m-worker-0-refresh-a1-0a0a0a"},
	}
	for _, tc := range []struct {
		name string
		lock Lock
		want LockHolder
	}{
		{"no lock Lease: free", Lock{}, LockFree},
		{"a Lease with no holder: free", Lock{Exists: true}, LockFree},
		{"held by one of the object's runner pods that has exited: stale, force-unlocked by the next Job", held("runner@" + job + "-x7k2p"), LockStale},
		{"held by a pod of one of the object's Jobs that no longer exists: stale", held("@captf-m-worker-0-refresh-a1-0a0a0a-b4d9c"), LockStale},
		{"held by one of the object's runner pods that still runs: its own runner", held("runner@captf-m-worker-0-drift-a2-def456-q9zzz"), LockOwnRunner},
		{"held by a workstation: left alone and reported as StateLocked", held("alice@laptop"), LockForeign},
		{"held by another object's runner pod: left alone", held("runner@captf-m-worker-1-apply-a1-abc123-x7k2p"), LockForeign},
		{"held with a name that only starts like the object's Job: left alone", held("runner@" + job + "-x7k2p-extra"), LockForeign},
		{"held with no lock info: unknown holder, left alone", Lock{Exists: true, ID: "lock-id-1", InfoProblem: "no annotation"}, LockForeign},
		{"held with lock info naming no host: left alone", held("runner"), LockForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ClassifyLock(tc.lock, owners)
			if v.Holder != tc.want {
				t.Fatalf("holder = %s, want %s (%s)", v.Holder, tc.want, v.Message())
			}
			if tc.want != LockFree && v.ID != "lock-id-1" {
				t.Errorf("ID = %q", v.ID)
			}
			if tc.want == LockForeign && tc.lock.Info != nil {
				msg := v.Message()
				if !strings.Contains(msg, tc.lock.Info.Who) || !strings.Contains(msg, "OperationTypeApply") || !strings.Contains(msg, "2026-01-02T03:04:05Z") {
					t.Errorf("StateLocked message must name holder, operation and time: %s", msg)
				}
			}
		})
	}
}

func TestRunnerPodOf(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	done := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}
	for _, tc := range []struct {
		name   string
		pod    corev1.Pod
		exited bool
	}{
		{"a succeeded pod has exited", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true},
		{"a failed pod has exited", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true},
		{"a running pod has not", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}}}, false},
		{"a pending pod has not", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, false},
		{"a pod whose containers all terminated has exited", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{done}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunnerPodOf(&tc.pod).Exited; got != tc.exited {
				t.Errorf("Exited = %v", got)
			}
		})
	}
}

func TestEverApplied(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    AppliedFacts
		want bool
	}{
		{"a provisioned object applied", AppliedFacts{Provisioned: true}, true},
		{`captf.io/applied: "true" on the durable inputs Secret means applied`, AppliedFacts{DurableInputsAnnotations: map[string]string{"captf.io/applied": "true"}}, true},
		{"a pinned image digest on the durable inputs Secret means applied", AppliedFacts{DurableInputsAnnotations: map[string]string{"captf.io/image-digest": "sha256:ab"}}, true},
		{"an existing state backup means applied", AppliedFacts{Backups: 1}, true},
		{"a durable inputs Secret without the marker or a digest: never applied", AppliedFacts{DurableInputsAnnotations: map[string]string{"captf.io/image": "x"}}, false},
		{`captf.io/applied other than "true" does not count`, AppliedFacts{DurableInputsAnnotations: map[string]string{"captf.io/applied": "false"}}, false},
		{"no durable inputs Secret, no backup, not provisioned: never applied", AppliedFacts{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EverApplied(tc.f); got != tc.want {
				t.Errorf("EverApplied = %v", got)
			}
		})
	}
}

func TestParseRestoreSerial(t *testing.T) {
	for in, ok := range map[string]bool{"7": true, "0": true, "": false, "07": false, "-1": false, "abc": false, "1.5": false} {
		_, err := ParseRestoreSerial(in)
		if (err == nil) != ok {
			t.Errorf("ParseRestoreSerial(%q) err = %v", in, err)
		}
	}
}

func TestStatusBackups(t *testing.T) {
	var in []BackupInfo
	for i := 20; i >= 0; i-- {
		in = append(in, BackupInfo{Serial: uint64(i), Bytes: 10, TakenAt: time.Unix(int64(i), 0)})
	}
	out := StatusBackups(in)
	if len(out) != 16 || out[0].Serial != 20 || out[15].Serial != 5 {
		t.Fatalf("status backups: %d, first %d", len(out), out[0].Serial)
	}
	if got := StatusBackups([]BackupInfo{{Serial: 0, Bytes: 3}}); len(got) != 0 {
		t.Errorf("serial 0 cannot be listed in status: %v", got)
	}
}
