// Package jobs builds the Kubernetes Jobs CAPTF runs and reads back what
// they reported.
//
// It owns:
//
//   - the effective JobPolicy of an object (book: Tuning Jobs): a machine's
//     or pool's spec.jobs merged field by field over its cluster's
//     spec.defaults.jobs, then the built-in defaults, with env merged by name,
//     imagePullSecrets unioned, and resources and the security contexts
//     replaced whole; a cluster's own spec.jobs never inherits its defaults.
//     Resolve also drops TF_* and KUBE_* env entries (and names them, never
//     their values, so the caller can emit EnvVarDropped) and Validate
//     reports JobPolicyInvalid;
//   - pod security (EvaluatePodSecurity): every Job's pod, and the pod a
//     policy gives a Job, against the Pod Security Standards restricted
//     profile with Kubernetes' pod-security-admission library, less
//     RestrictedExceptions (runAsNonRoot, left to the image), and with no
//     sysctl; Build, Validate and the admission webhook (PolicyPodSecurity)
//     all refuse through it;
//   - the batch/v1 Job of one run (reference-facts §8.1): the init container
//     that copies the runner, the module container running
//     `/captf/bin/runner run` with its arguments in their documented order,
//     the volumes and mounts, the environment, the security and resource
//     defaults, labels, annotations and the owner reference;
//   - the per-run Secret captf-run-<job>, owned by the Job, holding the
//     rendered root and tfvars (or, for a restore, the backup chunks under
//     restore/0, restore/1, …), built once the Job exists so it can carry
//     the Job's UID;
//   - decoding the runner's result document from the finished pod's
//     termination message into status.lastRun, the runtime version, the plan
//     and the changes, tolerating a missing or garbled document;
//   - classifying a finished Job (succeeded, failed, deadline, interrupted,
//     blocked, plan-changed, image pull failure, invalid image) from its
//     status and its pod, as a pure function.
//
// Nothing here talks to the API server: every function takes plain values
// and returns objects for the reconcile flow (internal/lifecycle) to create.
// Job names come from internal/decide and are taken as given.
package jobs
