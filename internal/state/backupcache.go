package state

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// CachedBytesAnnotation is set by StripBackupData on the cached copy of a
// state backup Secret: the length of the tfstate chunk it held. It never
// reaches the API server.
const CachedBytesAnnotation = "captf.io/cached-backup-bytes"

// StripBackupData is the manager cache's transform for state backup
// Secrets: a backup is a verbatim copy of a state, read in full only by a
// restore (which reads it live, RestoreInput), so the cache keeps its
// metadata and the size of its chunk (CachedBytesAnnotation) and drops the
// data. Other Secrets are returned as they are. A backup Secret whose data
// is already gone is left alone, so applying it twice changes nothing.
func StripBackupData(s *corev1.Secret) *corev1.Secret {
	if s.Labels[stateBackupLabel] != "true" || s.Data == nil {
		return s
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[CachedBytesAnnotation] = strconv.Itoa(len(s.Data[DataKey]))
	s.Data = nil
	return s
}

// chunkBytes is the size of a backup chunk's tfstate: its data when held,
// else what StripBackupData recorded.
func chunkBytes(s *corev1.Secret) int64 {
	if d, ok := s.Data[DataKey]; ok {
		return int64(len(d))
	}
	n, _ := strconv.ParseInt(s.Annotations[CachedBytesAnnotation], 10, 64)
	return n
}

// DataDroppedAnnotation is set on the manager's cached copy of a Secret
// whose data the cache does not keep (see DropData). It never reaches the
// API server.
const DataDroppedAnnotation = "captf.io/cached-data-dropped"

// DropData removes the data of s, marking the copy with
// DataDroppedAnnotation so a reader can tell it from a Secret without data
// and read it live instead. It changes and returns s.
func DropData(s *corev1.Secret) *corev1.Secret {
	if s.Data == nil && s.StringData == nil {
		return s
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[DataDroppedAnnotation] = "true"
	s.Data, s.StringData = nil, nil
	return s
}

// DataDropped reports whether s is a cached copy whose data DropData
// removed.
func DataDropped(s *corev1.Secret) bool { return s.Annotations[DataDroppedAnnotation] == "true" }
