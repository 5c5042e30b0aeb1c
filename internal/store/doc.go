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
package store

// Version is the storage format the types of this package write.
const Version = 1
