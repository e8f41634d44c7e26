// Package state owns everything CAPTF knows about an object's Terraform or
// OpenTofu state as the kubernetes backend stores it:
//
//   - the derived names: the backend's secret_suffix for a Terraform* object,
//     the base state Secret tfstate-default-<suffix> and its -part-N chunks,
//     the lock Lease lock-tfstate-default-<suffix>, and the backup sets
//     captf-state-backup-<suffix>-<serial>;
//   - the reader: it lists the Secrets that carry the backend's labels for a
//     suffix, orders them by chunk index, concatenates and gunzips them as one
//     stream under caps (32 chunks, 64 MiB decompressed) and parses only the
//     few fields of a state v4 file CAPTF needs (serial, lineage, runtime
//     version, root outputs as raw JSON, managed-resource count). Resource
//     attributes are streamed past, never decoded. A state that cannot be read
//     whole is reported with a reason that maps onto the StateReadable
//     condition (StateCorrupt, StateInconsistent, StateEncrypted), never read
//     in part;
//   - the lock: the Lease and the backend's lock info, and a pure
//     classification of its holder (one of the object's own runner pods, and
//     whether that pod is gone, or anything else);
//   - adoption of the state by the object after a successful apply or
//     restore (owner references on every chunk, the inputs-hash annotation on
//     the base Secret);
//   - backups: verbatim copies of each newly seen serial, pruning to the
//     newest N, listing them for status, and the chunks a restore Job pushes;
//   - cleanup of the state Secrets and lock Lease after a destroy;
//   - the pure "ever applied" test that tells lost state from no state.
//
// Read lists through a controller-runtime client.Reader; in the manager that
// is the cache, whose Secret informer is label-selected (captf.io/managed,
// which the runner's backend configuration adds to every state Secret and
// lock Lease). It asks the cache not to copy: a State shares its Secrets
// with the cache and never modifies them.
//
// Output values may be sensitive: the types that carry them redact
// themselves when formatted or logged, and nothing in this package logs them.
package state
