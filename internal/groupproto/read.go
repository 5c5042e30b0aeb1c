package groupproto

// ReadInput is what a refresh (Read) of the group gives the protocol.
type ReadInput struct {
	// Record is what reading the group's record found: RecordRefused when it could not be read
	// for another reason than its host not answering.
	Record Record
	// Imported: the state has the group's name only (an import, just made).
	Imported bool
	// OtherConfiguration: the record holds another configuration of the group than the state
	// (another apply changed it: a copy of this state, or an apply this state never saw finish).
	OtherConfiguration bool
}

// ReadAction is what a refresh of the group does.
type ReadAction int

const (
	// ReadFail: the record cannot be read; the refresh fails, saying why.
	ReadFail ReadAction = iota
	// ReadWithoutRecord: the record's host does not answer: the group as the state has it, its
	// members read from the hosts that answer, the others UNKNOWN, with a warning.
	ReadWithoutRecord
	// ReadNotFound: an import of a group that is not there.
	ReadNotFound
	// ReadLostRecord: the record is gone: the group stays (with a warning) while members carry
	// its records or stand where the state placed them; with none, it is gone from the state.
	ReadLostRecord
	// ReadFromRecord: the group's configuration is read from its record (an import, or a record
	// another apply changed), then its members.
	ReadFromRecord
	// ReadMembers: the configuration is the state's; the members are read.
	ReadMembers
)

var readActionNames = [...]string{"fail", "read without the record", "not found", "record lost", "read from the record", "read the members"}

func (a ReadAction) String() string {
	if a < 0 || int(a) >= len(readActionNames) {
		return "unknown"
	}
	return readActionNames[a]
}

// Read decides a refresh of the group.
func Read(in ReadInput) ReadAction {
	switch in.Record {
	case RecordUnreachable:
		if in.Imported {
			// An import has nothing of the group to show without its record.
			return ReadFail
		}
		return ReadWithoutRecord
	case RecordRefused:
		return ReadFail
	case RecordMissing:
		if in.Imported {
			return ReadNotFound
		}
		return ReadLostRecord
	case RecordFound:
	}
	if in.Imported || in.OtherConfiguration {
		return ReadFromRecord
	}
	return ReadMembers
}
