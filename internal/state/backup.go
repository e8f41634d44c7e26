package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// DefaultBackups is the default of --state-backups.
const DefaultBackups = 5

// BackupInfo describes one backup set.
type BackupInfo struct {
	Serial  uint64
	Lineage string
	TakenAt time.Time
	// Bytes is the compressed size, summed over the set's chunks.
	Bytes     int64
	Chunks    int
	Resources int
	Digest    string
	SourceJob string
	// InputsHash is the inputs hash the state carried when it was copied.
	InputsHash string
	// Complete is true when every chunk of the set is present exactly once.
	Complete bool
}

// backupSelector selects a suffix's backup Secrets.
func backupSelector(suffix string) client.MatchingLabels {
	return client.MatchingLabels{stateBackupLabel: "true", stateBackupSuffixLabel: suffix}
}

type backupSet struct {
	info    BackupInfo
	secrets []*corev1.Secret // by chunk index; nil where missing
	dup     bool
}

// groupBackups gathers backup Secrets into sets by their set annotation.
func groupBackups(items []corev1.Secret) map[string]*backupSet {
	sets := map[string]*backupSet{}
	for i := range items {
		s := &items[i]
		a := s.Annotations
		name := a[backupSetAnnotation]
		serial, err1 := strconv.ParseUint(a[backupSerialAnnotation], 10, 64)
		idx, err2 := strconv.Atoi(a[backupChunkAnnotation])
		total, err3 := strconv.Atoi(a[backupChunksAnnotation])
		if name == "" || err1 != nil || err2 != nil || err3 != nil || total < 1 || total > DefaultLimits.MaxChunks || idx < 0 || idx >= total {
			continue
		}
		set, ok := sets[name]
		if !ok {
			set = &backupSet{secrets: make([]*corev1.Secret, total)}
			set.info.Serial = serial
			set.info.Chunks = total
			sets[name] = set
		}
		if total != set.info.Chunks || serial != set.info.Serial {
			set.dup = true
			continue
		}
		if set.secrets[idx] != nil {
			set.dup = true
			continue
		}
		set.secrets[idx] = s
		set.info.Bytes += chunkBytes(s)
		if idx == 0 {
			set.info.Lineage = a[backupLineageAnnotation]
			set.info.Digest = a[backupDigestAnnotation]
			set.info.SourceJob = a[backupSourceJobAnnotation]
			set.info.InputsHash = a[inputsHashAnnotation]
			set.info.Resources, _ = strconv.Atoi(a[backupResourcesAnnotation])
			set.info.TakenAt, _ = time.Parse(time.RFC3339, a[backupTakenAtAnnotation])
		}
	}
	for _, set := range sets {
		set.info.Complete = !set.dup
		for _, s := range set.secrets {
			if s == nil {
				set.info.Complete = false
			}
		}
	}
	return sets
}

// sortedSets returns the sets newest first: by time taken, then serial.
func sortedSets(sets map[string]*backupSet) []*backupSet {
	out := make([]*backupSet, 0, len(sets))
	for _, s := range sets {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].info, out[j].info
		if !a.TakenAt.Equal(b.TakenAt) {
			return a.TakenAt.After(b.TakenAt)
		}
		return a.Serial > b.Serial
	})
	return out
}

func listBackupSets(ctx context.Context, c client.Reader, namespace, suffix string) (map[string]*backupSet, error) {
	var list corev1.SecretList
	if err := c.List(ctx, &list, client.InNamespace(namespace), backupSelector(suffix)); err != nil {
		return nil, fmt.Errorf("failed to list state backups for suffix %s in namespace %s: %w", suffix, namespace, err)
	}
	return groupBackups(list.Items), nil
}

// ListBackups returns a suffix's complete backup sets, newest first.
func ListBackups(ctx context.Context, c client.Reader, namespace, suffix string) ([]BackupInfo, error) {
	sets, err := listBackupSets(ctx, c, namespace, suffix)
	if err != nil {
		return nil, err
	}
	var out []BackupInfo
	for _, s := range sortedSets(sets) {
		if s.info.Complete {
			out = append(out, s.info)
		}
	}
	return out, nil
}

// StatusBackups turns backups (newest first) into status.stateBackups: at
// most 16, serial 0 left out (the API requires a serial of at least 1).
func StatusBackups(backups []BackupInfo) []v1alpha1.StateBackup {
	var out []v1alpha1.StateBackup
	for _, b := range backups {
		if b.Serial == 0 || b.Bytes < 1 || b.Serial > 1<<63-1 {
			continue
		}
		out = append(out, v1alpha1.StateBackup{Serial: int64(b.Serial), TakenAt: metav1.NewTime(b.TakenAt), Bytes: b.Bytes})
		if len(out) == 16 {
			break
		}
	}
	return out
}

// BackupOptions are the settings of one backup pass.
type BackupOptions struct {
	// Keep is --state-backups: how many backups to keep. 0 takes none and
	// deletes none.
	Keep int
	// Deleting is true while the object is being deleted: no backup is
	// taken and none pruned.
	Deleting bool
	// SourceJob names the Job that produced the state, if known.
	SourceJob string
	// Now stamps the backup; zero means time.Now().
	Now time.Time
}

// BackupOutcome is what a backup pass did, for events, metrics and status.
type BackupOutcome struct {
	// Taken is the backup taken in this pass (StateBackedUp event,
	// captf_state_backups_total{result="taken"}).
	Taken *BackupInfo
	// Pruned are the serials of the sets deleted (result="pruned").
	Pruned []uint64
	// Skipped is true when the state was not backed up because it could not
	// be read or the copy failed (result="skipped"); SkipReason says why,
	// for the log.
	Skipped    bool
	SkipReason string
	// Conflict is true when a backup of the same serial exists with another
	// digest; it is kept as it is.
	Conflict bool
	// Backups are the complete sets after this pass, newest first (for
	// status.stateBackups via StatusBackups).
	Backups []BackupInfo
}

// SyncBackups runs the backup step of a pass. st and readErr are what Read
// returned. A state serial with no complete backup set is copied verbatim
// into captf-state-backup-<suffix>-<serial> (same chunking), owned by the
// object; then sets beyond the newest opts.Keep are deleted. Nothing is
// taken while deleting or with Keep 0, and nothing is taken (Skipped) from a
// state that could not be read. Pruning runs only in a pass that read the
// state, so unreadable or lost state never costs a backup. A failed copy
// returns an error and leaves the serial without a complete set, so the next
// pass copies it again.
func SyncBackups(ctx context.Context, c client.Client, o owner.Owner, st *State, readErr error, opts BackupOptions) (out BackupOutcome, err error) {
	suffix, err := SuffixOf(o)
	if err != nil {
		return out, err
	}
	sets, err := listBackupSets(ctx, c, o.Namespace, suffix)
	if err != nil {
		return out, err
	}
	defer func() { out.Backups = completeInfos(sets) }()

	switch {
	case readErr != nil && !errors.Is(readErr, ErrNotFound):
		out.Skipped = true
		out.SkipReason = "state cannot be read: " + readErr.Error()
		return out, nil
	case st == nil || opts.Deleting || opts.Keep <= 0:
		return out, nil
	}

	name := BackupName(suffix, st.Serial)
	if existing, ok := sets[name]; ok && existing.info.Complete {
		out.Conflict = existing.info.Digest != st.Digest
	} else {
		info, err := copyBackup(ctx, c, o, suffix, st, opts)
		if err != nil {
			out.Skipped = true
			out.SkipReason = "copy failed"
			return out, err
		}
		sets[name] = &backupSet{info: info}
		out.Taken = &info
	}

	for i, set := range completeSets(sets) {
		if i < opts.Keep {
			continue
		}
		if err := deleteBackupSet(ctx, c, o.Namespace, suffix, set); err != nil {
			return out, err
		}
		out.Pruned = append(out.Pruned, set.info.Serial)
		delete(sets, BackupName(suffix, set.info.Serial))
	}
	return out, nil
}

func completeSets(sets map[string]*backupSet) []*backupSet {
	var out []*backupSet
	for _, s := range sortedSets(sets) {
		if s.info.Complete {
			out = append(out, s)
		}
	}
	return out
}

func completeInfos(sets map[string]*backupSet) []BackupInfo {
	var out []BackupInfo
	for _, s := range completeSets(sets) {
		out = append(out, s.info)
	}
	return out
}

// copyBackup writes the backup set of st: the chunks after the first, then
// the first, each created or, if left by an earlier attempt, overwritten.
func copyBackup(ctx context.Context, c client.Client, o owner.Owner, suffix string, st *State, opts BackupOptions) (BackupInfo, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)
	info := BackupInfo{
		Serial: st.Serial, Lineage: st.Lineage, TakenAt: now, Bytes: st.CompressedBytes, Chunks: len(st.secrets),
		Resources: st.ManagedResources, Digest: st.Digest, SourceJob: opts.SourceJob, InputsHash: st.InputsHash, Complete: true,
	}
	labels := map[string]string{
		managedLabel:           "true",
		stateBackupLabel:       "true",
		stateBackupSuffixLabel: suffix,
		moveLabel:              "",
		ownerKindLabel:         string(o.Kind),
		ownerNameLabel:         owner.LabelValue(o.Name),
	}
	if o.ClusterName != "" {
		labels[clusterNameLabel] = owner.LabelValue(o.ClusterName)
	}
	setName := BackupName(suffix, st.Serial)
	for i := len(st.secrets) - 1; i >= 0; i-- {
		src := &st.secrets[i]
		ann := map[string]string{
			backupSerialAnnotation:    strconv.FormatUint(st.Serial, 10),
			backupLineageAnnotation:   st.Lineage,
			backupTakenAtAnnotation:   now.Format(time.RFC3339),
			backupDigestAnnotation:    st.Digest,
			backupResourcesAnnotation: strconv.Itoa(st.ManagedResources),
			backupSetAnnotation:       setName,
			backupChunkAnnotation:     strconv.Itoa(i),
			backupChunksAnnotation:    strconv.Itoa(len(st.secrets)),
		}
		if opts.SourceJob != "" {
			ann[backupSourceJobAnnotation] = opts.SourceJob
		}
		if i == 0 && st.InputsHash != "" {
			ann[inputsHashAnnotation] = st.InputsHash
		}
		if enc, ok := src.Annotations[backendEncodingAnnotation]; ok {
			ann[backendEncodingAnnotation] = enc
		}
		data := make(map[string][]byte, len(src.Data))
		for k, v := range src.Data {
			data[k] = v
		}
		want := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:            BackupChunkName(suffix, st.Serial, i),
				Namespace:       o.Namespace,
				Labels:          labels,
				Annotations:     ann,
				OwnerReferences: []metav1.OwnerReference{o.Reference()},
			},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		if err := createOrOverwrite(ctx, c, want); err != nil {
			return info, fmt.Errorf("failed to copy state serial %d into backup Secret %s/%s: %w", st.Serial, want.Namespace, want.Name, err)
		}
	}
	return info, nil
}

// createOrOverwrite creates a Secret, or, when one of that name exists (an
// earlier attempt, or a cache that has not seen it yet), sets its content
// with a merge patch.
func createOrOverwrite(ctx context.Context, c client.Client, want *corev1.Secret) error {
	err := c.Create(ctx, want.DeepCopy())
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
	return c.Patch(ctx, want.DeepCopy(), client.MergeFrom(empty))
}

// deleteBackupSet deletes a set, its first Secret first so that it is never
// listed complete again while the rest goes.
func deleteBackupSet(ctx context.Context, c client.Client, namespace, suffix string, set *backupSet) error {
	for i := 0; i < set.info.Chunks; i++ {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: BackupChunkName(suffix, set.info.Serial, i)}}
		if i < len(set.secrets) && set.secrets[i] != nil {
			s.Name = set.secrets[i].Name
		}
		if err := c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to prune state backup Secret %s/%s: %w", namespace, s.Name, err)
		}
	}
	return nil
}

// ErrBackupNotFound: no complete backup set of that serial (RestoreJobSucceeded
// False/RestoreBackupNotFound).
var ErrBackupNotFound = errors.New("no such state backup")

// ErrBackupDamaged: the backup set's chunks do not match its digest or do not
// read as a state.
var ErrBackupDamaged = errors.New("state backup is damaged")

// ParseRestoreSerial reads the captf.io/restore-state annotation value. A
// value that is not a serial is ErrBackupNotFound.
func ParseRestoreSerial(value string) (uint64, error) {
	n, err := strconv.ParseUint(value, 10, 64)
	if err != nil || value == "" || (len(value) > 1 && value[0] == '0') {
		return 0, fmt.Errorf("%w: %q is not a state serial", ErrBackupNotFound, value)
	}
	return n, nil
}

// Restore is what a restore Job needs: the chosen backup's chunks in order
// (the per-run Secret's restore/0, restore/1, …; --restore-chunks is their
// number) and its managed-resource count (--restore-resources).
type Restore struct {
	Serial    uint64
	Chunks    [][]byte
	Resources int
	Digest    string
}

// RestoreInput reads the backup set of a serial for a restore Job. The set
// must be complete, match its digest and read as a state.
func RestoreInput(ctx context.Context, c client.Reader, namespace, suffix string, serial uint64) (*Restore, error) {
	sets, err := listBackupSets(ctx, c, namespace, suffix)
	if err != nil {
		return nil, err
	}
	set, ok := sets[BackupName(suffix, serial)]
	if !ok || !set.info.Complete {
		return nil, fmt.Errorf("%w: no complete backup of serial %d for suffix %s", ErrBackupNotFound, serial, suffix)
	}
	r := &Restore{Serial: serial, Resources: set.info.Resources, Digest: set.info.Digest}
	h := sha256.New()
	for _, s := range set.secrets {
		data, ok := s.Data[DataKey]
		if !ok {
			return nil, fmt.Errorf("%w: backup Secret %s has no %q data", ErrBackupDamaged, s.Name, DataKey)
		}
		h.Write(data)
		r.Chunks = append(r.Chunks, data)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != set.info.Digest {
		return nil, fmt.Errorf("%w: backup %s does not match its digest", ErrBackupDamaged, BackupName(suffix, serial))
	}
	content, err := Decode(r.Chunks, DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("%w: backup %s: %w", ErrBackupDamaged, BackupName(suffix, serial), err)
	}
	if content.Serial != serial {
		return nil, fmt.Errorf("%w: backup %s holds serial %d", ErrBackupDamaged, BackupName(suffix, serial), content.Serial)
	}
	return r, nil
}
