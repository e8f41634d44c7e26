package state

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStripBackupData: the manager caches a state backup without its data
// but with its size, so status.stateBackups[].bytes reads the same from a
// stripped copy as from the Secret itself (reference-facts §9, backups'
// data kept out of the cache).
func TestStripBackupData(t *testing.T) {
	backup := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "captf-state-backup-x-3", Labels: map[string]string{stateBackupLabel: "true"}, Annotations: map[string]string{
				backupSetAnnotation: "captf-state-backup-x-3", backupSerialAnnotation: "3", backupChunkAnnotation: "0", backupChunksAnnotation: "1",
			}},
			Data: map[string][]byte{DataKey: []byte("0123456789")},
		}
	}
	full := groupBackups([]corev1.Secret{*backup()})["captf-state-backup-x-3"].info.Bytes
	s := StripBackupData(backup())
	if s.Data != nil {
		t.Fatal("a backup kept its data")
	}
	if got := groupBackups([]corev1.Secret{*s})["captf-state-backup-x-3"].info.Bytes; got != full || full != 10 {
		t.Fatalf("bytes from the stripped copy %d, from the Secret %d; want 10", got, full)
	}
	if again := StripBackupData(s.DeepCopy()); again.Annotations[CachedBytesAnnotation] != "10" {
		t.Fatalf("stripping twice lost the size: %v", again.Annotations)
	}
	st := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tfstate-default-x"}, Data: map[string][]byte{DataKey: []byte("keep")}}
	if StripBackupData(st).Data == nil {
		t.Fatal("a state Secret lost its data")
	}
}
