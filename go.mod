module github.com/virtfleet/terraform-provider-virt

go 1.26.8

require (
	github.com/digitalocean/go-libvirt v0.0.0-20251117222411-bae19ce5cb72
	github.com/hashicorp/terraform-plugin-log v0.11.0
	libvirt.org/go/libvirtxml v1.11010.0
)

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/fatih/color v1.18.0 // indirect
	github.com/hashicorp/go-hclog v1.6.3 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	golang.org/x/crypto v0.50.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
)
