// Package kit is the module author's kit of tfcapi-lint: the contract test
// (tfcapi-lint test), which applies a module offline with mock providers
// through the runtime's own test command, feeding it the role's contract
// inputs as CAPTF renders them and decoding its outputs as the manager
// decodes them; and the scaffold (tfcapi-lint init), which writes a new
// module that satisfies the contract from its first commit.
//
// It imports contract and inputs, never a controller; internal/lint
// dispatches its test and init commands here.
package kit
