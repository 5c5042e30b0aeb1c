package domain

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

// DomainModel is virt_domain's state. Everything but host, name, running and description is a
// fact read from the host.
type DomainModel struct {
	ID          types.String `tfsdk:"id"`
	Host        types.String `tfsdk:"host"`
	Name        types.String `tfsdk:"name"`
	UUID        types.String `tfsdk:"uuid"`
	Running     types.Bool   `tfsdk:"running"`
	Description types.String `tfsdk:"description"`
	Adopted     types.Bool   `tfsdk:"adopted"`
	VCPU        types.Int64  `tfsdk:"vcpu"`
	MemoryMiB   types.Int64  `tfsdk:"memory_mib"`
	Disks       types.List   `tfsdk:"disks"`
}

// DomainIdentityModel is virt_domain's identity: the host and the domain's name on it, as in
// the string import ID `HOST/NAME`.
type DomainIdentityModel struct {
	Host types.String `tfsdk:"host"`
	Name types.String `tfsdk:"name"`
}

var domainDiskType = types.ObjectType{AttrTypes: map[string]attr.Type{"device": types.StringType, "source": types.StringType}}

const domainSchemaDescription = "One libvirt domain that no group manages, taken under Terraform's management **as it is**: an adoption. " +
	"`virt_domain` never defines, redefines or deletes a domain, and never creates or deletes a volume. " +
	"Create (or the first apply after an import, which is how `terraform query -generate-config-out` brings domains in) adopts the existing domain of that `name`: it writes the provider's ownership record in the domain's metadata (the namespace `https://virtfleet.dev/xmlns/virt-domain/1`; see it with `virsh metadata NAME https://virtfleet.dev/xmlns/virt-domain/1`), which is the only change the plan after an import shows (`adopted` becomes `true`, an update in place). The domain keeps its UUID, definition and disks. " +
	"A name no domain has is refused at plan (`virt_domain` adopts, it does not create), and so is a domain that carries a group's member record: it belongs to that group (take such domains into a group with the group's `adopt_existing`, or one at a time with an imported `virt_per_instance_config`). A domain another Terraform state adopted is refused too, unless it is imported, which takes it over at the next apply. Groups leave an adopted domain alone: a group's `adopt_existing` or a per-instance config does not adopt it, and its name is taken for the group's members; destroy the `virt_domain` first to hand it to a group. " +
	"In place, `running` starts or shuts down the domain and `description` changes its description, live. " +
	"**Destroy releases the domain**: it removes the ownership record and nothing else; the domain, its state (running or not) and its volumes stay on the host as they are."

func DomainSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: domainSchemaDescription,
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				MarkdownDescription: "`HOST/NAME`, the string import ID.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"host": schema.StringAttribute{
				MarkdownDescription: "The provider host the domain is on: `default` (the provider's `uri`, the default) or the name of one of its `host` blocks. Changing it adopts another domain (a replacement: this one is released).",
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.DefaultHost),
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"name": schema.StringAttribute{
				MarkdownDescription: "Name of the existing domain to adopt, as `virsh list --all` shows it. Changing it adopts another domain (a replacement: this one is released, never deleted).",
				Required:            true,
				Validators:          []validator.String{domainNameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"uuid": schema.StringAttribute{
				MarkdownDescription: "The domain's libvirt UUID; an adoption keeps it.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"running": schema.BoolAttribute{
				MarkdownDescription: "Whether the domain runs. Unset, it is left as it is. `true` starts a domain that is shut off; `false` asks a running one to shut down (an ACPI power button press) and waits up to " + domainShutdownTimeout.String() + " for it: a guest that ignores the request is not powered off, the apply fails instead, saying so. A paused domain counts as not running.",
				Optional:            true,
				Computed:            true,
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
			},
			"description": schema.StringAttribute{
				MarkdownDescription: "The domain's description (`virsh desc`), changed live; `\"\"` for none. Unset, it is left as it is.",
				Optional:            true,
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"adopted": schema.BoolAttribute{
				MarkdownDescription: "Whether the domain carries this state's ownership record. `false` right after an import, until the apply writes it: that is the adoption a plan after an import shows.",
				Computed:            true,
			},
			"vcpu": schema.Int64Attribute{
				MarkdownDescription: "Virtual CPUs, as the domain runs (or would start, when shut off). Read only: `virt_domain` does not redefine a domain.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"memory_mib": schema.Int64Attribute{
				MarkdownDescription: "Memory in MiB, as `vcpu`. Read only.",
				Computed:            true,
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"disks": schema.ListNestedAttribute{
				MarkdownDescription: "The domain's disks, in its definition's order. Read only: an adoption, and a destroy, keep every disk and volume as it is.",
				Computed:            true,
				PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"device": schema.StringAttribute{MarkdownDescription: "The disk's serial, else its target device (`vda`, `sda`, ...).", Computed: true},
					"source": schema.StringAttribute{MarkdownDescription: "`POOL/VOLUME` for a volume disk, else the file or block device path.", Computed: true},
				}},
			},
		},
	}
}

func DomainIdentitySchema() identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"host": identityschema.StringAttribute{
			OptionalForImport: true,
			Description:       "The provider host the domain is on, as the resource's `host`; unset is `default`, the provider's `uri`.",
		},
		"name": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "Name of the domain on the host, as the resource's `name`. The string import ID is `NAME` or `HOST/NAME`.",
		},
	}}
}

// domainNameRule is what the provider relies on of a domain name: libvirt allows any text but
// "/", which the import ID `HOST/NAME` relies on.
const domainNameRule = "a libvirt domain name: not empty, no \"/\", no leading or trailing space"

var domainNameValidator = validators.Parsed(domainNameRule, checkDomainName)

func checkDomainName(s string) error {
	if s == "" || strings.Contains(s, "/") || strings.TrimSpace(s) != s {
		return fmt.Errorf("%q is not %s", s, domainNameRule)
	}
	return nil
}

// diskSource is how a disk's source is shown.
func diskSource(d backend.Disk) string {
	if d.Volume != "" {
		return d.Pool + "/" + d.Volume
	}
	return d.Path
}

// DomainFacts fills m's host facts from dom, as Read, an import and a list read them.
func DomainFacts(m *DomainModel, host string, dom backend.Domain) {
	m.ID = types.StringValue(host + "/" + dom.Name)
	m.Host, m.Name = types.StringValue(host), types.StringValue(dom.Name)
	m.UUID = types.StringValue(dom.UUID)
	m.Running = types.BoolValue(dom.Status == engine.StatusRunning)
	m.Description = types.StringValue(dom.Description)
	m.VCPU, m.MemoryMiB = types.Int64Value(dom.VCPU), types.Int64Value(dom.MemoryMiB)
	disks := make([]attr.Value, 0, len(dom.Disks))
	for _, d := range dom.Disks {
		disks = append(disks, types.ObjectValueMust(domainDiskType.AttrTypes, map[string]attr.Value{
			"device": types.StringValue(d.DeviceName), "source": types.StringValue(diskSource(d)),
		}))
	}
	m.Disks = types.ListValueMust(domainDiskType, disks)
}
