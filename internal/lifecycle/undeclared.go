package lifecycle

import "github.com/captf-io/cluster-api-provider-terraform/internal/decide"

// UndeclaredOutputs returns the contract outputs the module does not
// declare, as the runner of the newest retained apply, refresh, drift or
// destroy Job found them (internal/decide.UndeclaredOutputs): the module
// whose outputs the state holds. The adapters pass it to the contract
// decoders as the facts' Undeclared list, so a module lacking a contract
// output reads OutputsValid=False/OutputsMissing (Module Contract, "Null
// semantics") rather than a pending null.
//
// It reads p.Records, which bookkeeping fills on every pass from every
// finished Job of the object (jobs.Record carries the runner's findings),
// so it holds on later passes too, not only on the pass a Job is bookkept.
func (p *Pass) UndeclaredOutputs() []string { return decide.UndeclaredOutputs(p.Records) }
