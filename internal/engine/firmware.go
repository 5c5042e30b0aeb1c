package engine

import (
	"fmt"
	"strings"
)

// FieldProblem is a template setting that cannot work on any host: the attribute under the
// template it is about ("secure_boot", "cpu.model"), and what is wrong and allowed.
type FieldProblem struct {
	Field   string
	Problem string
}

// IsQ35 reports whether a configured machine is a q35 one: the alias or a versioned name.
func IsQ35(machine string) bool { return machine == "q35" || strings.HasPrefix(machine, "pc-q35-") }

// FirmwareProblems checks the template's firmware, machine and CPU against each other: Secure
// Boot needs EFI and a q35 machine (OVMF's Secure Boot builds need SMM, which only q35 has);
// a CPU model goes with the custom mode, and only with it.
func FirmwareProblems(t Template) []FieldProblem {
	var out []FieldProblem
	if t.SecureBoot && !t.EFI() {
		out = append(out, FieldProblem{"secure_boot", fmt.Sprintf("secure_boot = true needs firmware = %q (the firmware is %q). Set firmware = %q, or leave secure_boot out", FirmwareEFI, firmwareName(t.Firmware), FirmwareEFI)})
	}
	if t.SecureBoot && !IsQ35(t.Machine) {
		out = append(out, FieldProblem{"secure_boot", fmt.Sprintf("secure_boot = true needs a q35 machine (machine = %q, or a versioned pc-q35-* name), and the machine is %s: OVMF's Secure Boot builds need SMM, which only q35 has", "q35", machineName(t.Machine))})
	}
	if c := t.CPU; c != nil {
		switch {
		case c.Mode == CPUCustom && c.Model == "":
			out = append(out, FieldProblem{"cpu.model", fmt.Sprintf("cpu mode %q needs model, the CPU model to give the guest (`virsh domcapabilities` lists those the host can run)", CPUCustom)})
		case c.Mode != CPUCustom && c.Model != "":
			out = append(out, FieldProblem{"cpu.model", fmt.Sprintf("model = %q goes only with mode = %q; mode %q gives the guest the host's CPU. Remove model, or set mode = %q", c.Model, CPUCustom, c.Mode, CPUCustom)})
		}
	}
	return out
}

func machineName(m string) string {
	if m == "" {
		return "libvirt's default (pc)"
	}
	return fmt.Sprintf("%q", m)
}
