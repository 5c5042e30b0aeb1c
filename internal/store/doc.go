// Package store holds the storage formats of what the provider keeps on a libvirt host: the
// group record's body and each member's record in its domain's metadata. They are their own
// types, apart from the engine's, so that a change of the engine never changes a byte on a host by
// accident: every stored field has its JSON or XML name here, and its conversion to and from the
// engine's types is written out once, in this package.
//
// Version is the format these types write. A change to a stored field (its name, type, order or
// omission rule) is a new version: bump Version, add its fingerprint to testdata (see
// TestFingerprint), and keep reading every earlier version, with its golden files. Version 1
// records name no version in their bodies: what tells them is the group record's envelope
// format ("virt-group-record/1", in backend/libvirt) and the member record's namespace
// (MemberNamespace), so a new version must be told apart there or in a field a version 1 body
// does not have, and the reader chooses the decoder by it.
//
// Version 2 adds fields and changes none: the group's health_check, its update policy's
// min_ready, ready_timeout and on_failure, and the same in the resource's configuration
// (ResourceSpec). Each is left out at its zero value, which is what a version 1 record means by
// not having it (no health check, the default policy), so one decoder reads both versions: a
// version 1 body reads as it meant and, written again, is the same bytes. A version 2 body keeps
// the envelope format "virt-group-record/1" on purpose: a release that reads only version 1 skips
// a generation of another format as damaged and would build on an older generation; with the
// same format it reads the record and ignores the fields it does not know (a downgrade drops the
// health check and the new policy fields from the record at its next write, and nothing else).
// The member record is unchanged in version 2.
//
// Version 3 adds fields to the group record and changes none, the same way, each left out at its
// zero value, so that one decoder reads versions 1 to 3 and an older record written again is the
// same bytes; the envelope format stays "virt-group-record/1" for the reason given for version 2:
//   - retained_config_state: the members whose per-instance config was destroyed with
//     remove_instance_state_on_destroy = false and which keep its state until their next update
//     (engine.GroupState.Retained). A downgrade drops the list at its next write, and the members
//     then lose the retained state at the downgraded release's next apply, as that release did.
//   - the group's adopt_existing and abandon (the names it abandons), in the group and in the
//     resource's configuration (adopt nothing by name, abandon nothing when left out). A release
//     that reads only version 2 ignores them: to it an abandoned domain is one no provider
//     created, whose name its scale-out refuses to create over, and whose volumes (named as the
//     group's own) its group destroy takes for leftovers and deletes; so a downgrade must not
//     destroy a group that abandoned members.
//
// Version 4 adds fields and changes none, each left out at its zero value as in versions 2 and
// 3, so that a record written by version 3 is read as it was and written again as the same
// bytes: the template's firmware, secure_boot, machine and cpu, graphics (type, listen and the
// write-only password's version, never the password), rng and filesystems, and a network
// interface's address (reserved, or a pinned address in an applied state), in the template of
// the group and member records, in a member's desired instance and in the resource's
// configuration; the desired instance's nvram, the member's own NVRAM volume; a per-instance
// config's and a preserved state's network_ips. A release that reads only version 3 ignores
// them: at a member's next restart it would define it as a BIOS domain without those devices,
// and it would never delete a member's NVRAM volume or release its address reservations.
//
// Version 5 adds one field and changes none, left out at its zero value as in versions 2 to 4:
// cloud-init's user_data_wo_version, the version of the write-only user data (never the data nor
// anything derived from it), in the template of the group and member records, in a member's
// desired instance and in the resource's configuration. A release that reads only version 4
// ignores it: to it such a member's seed has empty user data, so its next seed write (a metadata
// change, a replacement) would write the seed without the user data; do not downgrade a group that
// uses user_data_wo.
//
// Version 6 adds fields and changes none, each left out at its zero value as in versions 2 to 5:
// the member record's move, the move between hosts under way (from, to, live), written before a
// move changes anything and removed when it ends; the group's distribution_policy drain,
// rebalance and live = false (cold_moves), in the group record's group and in the resource's
// configuration; left out, no host is drained, members do not rebalance and move live where the
// hosts allow, which is what an older record means. A release that reads only version 5 ignores
// them: to it a member cut off in the middle of a move is the copy its listing finds first, and a
// copy on the target is a duplicate it leaves alone; a drained host is one of the group's hosts
// like the others, where its scale-out may place new members again. Do not downgrade while a move
// is under way.
//
// Version 7 adds one field and changes none, left out at its zero value as in versions 2 to 6:
// the group record's inventory, every object the group made (domains by host, name and UUID,
// volumes, NVRAM volumes and seeds by host and name; reservations have a kind but are not written
// yet), each an intent until the group has seen it made. A record without it is from an earlier
// release and gains one once, from what it proves (engine.GroupState.Inventoried: the member
// domains it placed and the volumes of their own names their definitions use), so that one
// decoder reads versions 1 to 7 and an older record written again is the same bytes until an
// apply writes the inventory. A release that reads only version 6 ignores the inventory: it
// deletes volumes by their names again (a hand-made volume of the group's scheme included) and
// drops the inventory at its next write, after which this release adopts one again, from member
// domains only.
//
// Version 8 adds fields and changes none, each left out at its zero value as in versions 2 to 7:
// the update policy's canary (update_policy.canary: the hold, a number or a percentage, in the
// group record and in the resource's configuration; left out, nothing is held, as an older record
// means), the update policy's snapshot (update_policy.snapshot: the disks and the retention) and the
// inventory's snapshot objects (kind "snapshot": the volume, the snapshot's tag in it, the
// template revision it was taken on, when it was taken and until when it is kept). One decoder
// reads versions 1 to 8. A release that reads only version 7 refuses a record that holds a
// snapshot object (an inventory kind it does not know) rather than drop it, so that no snapshot is
// left without its record; one with no snapshot object reads as it did, the policy's snapshot
// ignored.
package store

// Version is the storage format the types of this package write.
const Version = 8
