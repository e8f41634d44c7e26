package state

// AppliedFacts are what remains to tell whether an object with no state ever
// applied (book: Lifecycle Walkthroughs, Lost state).
type AppliedFacts struct {
	// Provisioned is the object's status.initialization.provisioned.
	Provisioned bool
	// DurableInputsAnnotations are the annotations of the durable inputs
	// Secret; nil when it is missing.
	DurableInputsAnnotations map[string]string
	// Backups is the number of state backup sets that exist.
	Backups int
}

// EverApplied reports whether an object counts as applied: it is
// provisioned, its durable inputs Secret carries captf.io/applied "true" or
// pins an image digest, or a state backup exists. An applied object with no
// state has lost it (StateReadable=False/StateLost); one that never applied
// has nothing to lose.
func EverApplied(f AppliedFacts) bool {
	return f.Provisioned ||
		f.DurableInputsAnnotations[appliedAnnotation] == "true" ||
		f.DurableInputsAnnotations[imageDigestAnnotation] != "" ||
		f.Backups > 0
}
