// Package webhook holds CAPTF's validating admission webhooks, one validator
// per kind: the rules the book gives to admission (image reference syntax,
// variable names, jobs policy and pod isolation, immutability, the identity
// SubjectAccessReview and the delete guards). The pure rules are functions
// returning a field.ErrorList; the validators turn a non-empty list into
// apierrors.NewInvalid, so every message names the field at fault. The
// webhooks write nothing: they read objects and create SubjectAccessReviews
// only.
//
// There is no mutating webhook: CAPTF resolves every default at reconcile
// time.
package webhook
