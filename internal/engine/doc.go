// Package engine decides what a stateful group of virtual machines must do. It is pure Go: no I/O,
// no libvirt, no Terraform framework, so every rule can be tested by calling a function.
//
// Naming. Instance i of a group is named "<base>-<i>", with i counting from 1. Scale-out takes the
// lowest free indices, so gaps left by deleted members are filled first. Scale-in removes the
// highest indices first. A volume of an instance is named "<instance>-<device>.<format>", and the
// boot volume uses the reserved device name "boot".
//
// Actions. Changes are ordered NONE < REFRESH < RESTART < REPLACE. Labels and description need
// NONE (they are applied live with no disruption); metadata keys and disks added, removed or grown
// need REFRESH (applied live to a running domain); vcpu, memory and network interfaces need RESTART;
// boot image and domain type need REPLACE. The update policy's minimal_action raises the action of
// an instance that changes at all, and most_disruptive_allowed_action caps it: an instance that
// needs more than the cap is reported as blocked and is not touched.
//
// Preserved state. Each instance has a preserved state from policy and one from config, kept
// apart. The config part holds the instance's per-instance config as given, disks the template
// does not define included. The policy part holds the policy's disks that the template defines
// and the config does not name: a config entry shadows the policy entry of the same device.
// Config wins over policy, and policy over template. A disk removed from the config falls back to
// the policy when the policy names it; otherwise a template disk stays attached but stateless,
// and a disk the template does not define is detached. Config metadata overrides the template's;
// removed, it falls back to the template value or disappears.
//
// Volume fate. A preserved disk is kept on every recreation (replace, autoheal, update). On a
// permanent deletion (scale-in, group destroy, remove_instance_on_destroy) it is deleted only with
// delete_rule ON_PERMANENT_INSTANCE_DELETION, else released intact. A stateless template disk is
// recreated with its instance and deleted with it; a disk the group did not create is only
// released.
//
// Membership. A domain is a member when its record names the group under its index's name, or,
// when no provider created it, when one of the group's configs names it (it is adopted). Of two
// hosts with a member of one name, the first in the group's order has it (GroupState.Classify).
//
// Types, not words. Member statuses, the host's reasons for them and planned actions are typed
// values (Status, StateReason, Planned): rules decide on those, and their words are rendered only
// for plans and messages.
//
// Operations. A plan runs as ordered waves of operations, and each operation as an ordered list of
// typed tasks (steps.go) with the records it writes: a restart or a replacement makes its volumes
// and stores its new definition before its member stops; a wave of a rollout takes down at most
// max_unavailable running members; the members a scale-in or a destroy removes are all asked to
// shut down first (early tasks) and waited for together. FuzzStepOrder checks these orders on the
// task lists themselves.
//
// Revisions. A template revision is a stable hash of the template's canonical form, so equal
// templates always have equal revisions whatever the order of their maps and disk sets.
package engine
