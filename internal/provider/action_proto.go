package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// The protocol server (protocolServer) embeds the framework's server as a plain
// tfprotov6.ProviderServer, which hides the action calls the framework's server implements:
// they are passed on here, so that Terraform 1.14 sees the provider's actions.
var _ tfprotov6.ActionServer = (*protocolServer)(nil)

// actions is the framework's server as the action calls' server.
func (s *protocolServer) actions() tfprotov6.ActionServer {
	return s.ProviderServer.(tfprotov6.ActionServer)
}

func (s *protocolServer) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return s.actions().ValidateActionConfig(ctx, req)
}

func (s *protocolServer) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	return s.actions().PlanAction(ctx, req)
}

func (s *protocolServer) InvokeAction(ctx context.Context, req *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	return s.actions().InvokeAction(ctx, req)
}
