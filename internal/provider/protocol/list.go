package protocol

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// ProtocolServer embeds the framework's server as a tfprotov6.ProviderServer, which has no list
// resource calls yet (terraform-plugin-go keeps them in ListResourceServer until a major
// version): without these, Terraform would be served the list resources' schemas and then be
// told that listing is not implemented. They pass the calls through, and a listed group's object
// goes to Terraform as every other group value does, with `instances` as the list its schema has
// (instances.go).
var _ tfprotov6.ListResourceServer = (*ProtocolServer)(nil)

func (s *ProtocolServer) listServer() (tfprotov6.ListResourceServer, error) {
	l, ok := s.ProviderServer.(tfprotov6.ListResourceServer)
	if !ok {
		return nil, fmt.Errorf("the provider's server %T does not serve list resources", s.ProviderServer)
	}
	return l, nil
}

func (s *ProtocolServer) ValidateListResourceConfig(ctx context.Context, req *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	l, err := s.listServer()
	if err != nil {
		return nil, err
	}
	return l.ValidateListResourceConfig(ctx, req)
}

// ListResource is in flight in the plugin's lifetime until its stream has ended: the listing
// runs as Terraform reads the stream, under ctx, after the call has returned.
func (s *ProtocolServer) ListResource(ctx context.Context, req *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	l, err := s.listServer()
	if err != nil {
		return nil, err
	}
	ctx, done := s.Life.Enter(ctx)
	stream, err := l.ListResource(ctx, req)
	if err != nil || stream == nil || stream.Results == nil {
		done()
		return stream, err
	}
	results := stream.Results
	group := req.TypeName == GroupTypeName
	stream.Results = func(push func(tfprotov6.ListResourceResult) bool) {
		defer done()
		for r := range results {
			if group {
				if err := ToTerraform(r.Resource); err != nil {
					r.Resource = nil
					r.Diagnostics = append(r.Diagnostics, &tfprotov6.Diagnostic{Severity: tfprotov6.DiagnosticSeverityError,
						Summary: "Cannot encode the listed group", Detail: err.Error() + ". This is a bug in the provider; please report it."})
				}
			}
			if !push(r) {
				return
			}
		}
	}
	return stream, nil
}
