package engine

// kept is an inventory that holds the volumes on the default host, confirmed: what the group
// record of a group that made them keeps.
func kept(volumes ...string) Inventory {
	inv := Inventory{Kept: true}
	for _, v := range volumes {
		inv.Items = append(inv.Items, Made{Kind: MadeVolume, Host: DefaultHost, Name: v, Confirmed: true})
	}
	return inv
}

// stateWith is state(g) whose record keeps the inventory inv.
func stateWith(g Group, inv Inventory) GroupState {
	s := state(g)
	s.Inventory = inv
	return s
}
