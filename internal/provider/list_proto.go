package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// protocolServer embeds the framework's server as a tfprotov6.ProviderServer, which does not yet
// hold the list resource calls (terraform-plugin-go keeps them in a separate interface for now):
// without these methods Terraform is told the provider has no list support. A listed group's
// object goes to Terraform as every other group value does, with `instances` as the list its
// schema has (instances_proto.go).

var _ tfprotov6.ProviderServerWithListResource = (*protocolServer)(nil) //nolint:staticcheck // the interface terraform-plugin-go checks for now

func (s *protocolServer) listServer() (tfprotov6.ProviderServerWithListResource, error) { //nolint:staticcheck
	ls, ok := s.ProviderServer.(tfprotov6.ProviderServerWithListResource) //nolint:staticcheck
	if !ok {
		return nil, fmt.Errorf("the provider server %T serves no list resources", s.ProviderServer)
	}
	return ls, nil
}

func (s *protocolServer) ValidateListResourceConfig(ctx context.Context, req *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	ls, err := s.listServer()
	if err != nil {
		return nil, err
	}
	return ls.ValidateListResourceConfig(ctx, req)
}

func (s *protocolServer) ListResource(ctx context.Context, req *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	ls, err := s.listServer()
	if err != nil {
		return nil, err
	}
	stream, err := ls.ListResource(ctx, req)
	if err != nil || stream == nil || stream.Results == nil || req.TypeName != groupTypeName {
		return stream, err
	}
	results := stream.Results
	stream.Results = func(push func(tfprotov6.ListResourceResult) bool) {
		for r := range results {
			if err := toTerraform(r.Resource); err != nil {
				r.Resource = nil
				r.Diagnostics = append(r.Diagnostics, &tfprotov6.Diagnostic{Severity: tfprotov6.DiagnosticSeverityError,
					Summary: "Cannot encode the listed group", Detail: err.Error() + ". This is a bug in the provider; please report it."})
			}
			if !push(r) {
				return
			}
		}
	}
	return stream, nil
}
