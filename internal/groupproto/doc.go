// Package groupproto is the stateful group's plan/apply protocol as values: what Terraform and
// the hosts give a plan, a refresh or an apply of the group (prior state, configuration, private
// state, this process's observation, the record's generation, the command) in, one typed
// decision out. It imports the engine and nothing of Terraform or libvirt, so that every branch
// of the protocol is a table test; the provider's ModifyPlan, Read and Create/Update convert
// what the framework gives them, call it, and act on the decision.
//
// It is a package of its own, not files of internal/provider, so that the rule "no framework
// here" is a fact of its imports, and so that splitting the provider into folders moves none of
// it.
package groupproto
