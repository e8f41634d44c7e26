// Package inputs renders what a CAPTF Job's module receives (book: Job
// Inputs, Module Variables, Contract - Common/Cluster/Machine/MachinePool):
//
//   - the generated root main.tf.json: the partial kubernetes backend stub,
//     one variable per contract input (nullable ones default to null,
//     bootstrap_data sensitive), one untyped variable per user variable
//     (sensitive when its winning value came from a Secret), the call
//     module "role" { source = "../../module" } forwarding every variable by
//     name, and every contract output re-exported with "sensitive": true;
//   - terraform.tfvars.json: the rendered contract inputs and the merged
//     user variables;
//   - the inputs hash (scheme h2) over exactly the hashed set of Job Inputs
//     §7, computed on canonical JSON (package canonical);
//   - the 1,000,000-byte cap on the two files together;
//   - user-variable resolution from already-fetched ConfigMap and Secret
//     data: merge order, formats, name rules, UTF-8, value-free errors;
//   - the special inputs' Kubernetes-side rules: endpoint provenance, the
//     control_plane_initialized latch, cluster_network's shape, bootstrap
//     data and format, pool autoscaling and the replicas clamp, tags.
//
// Everything here works on plain Go values: no Kubernetes client, no I/O.
package inputs
