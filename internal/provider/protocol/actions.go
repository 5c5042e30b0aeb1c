package protocol

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// The protocol server (ProtocolServer) embeds the framework's server as a plain
// tfprotov6.ProviderServer, which hides the action calls the framework's server implements:
// they are passed on here, so that Terraform 1.14 sees the provider's actions.
var _ tfprotov6.ActionServer = (*ProtocolServer)(nil)

// actions is the framework's server as the action calls' server.
func (s *ProtocolServer) actions() tfprotov6.ActionServer {
	return s.ProviderServer.(tfprotov6.ActionServer)
}

func (s *ProtocolServer) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return s.actions().ValidateActionConfig(ctx, req)
}

// PlanAction reads the group's hosts (the action's plan), in flight in s.life.
func (s *ProtocolServer) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	ctx, done := s.Life.Enter(ctx)
	defer done()
	return s.actions().PlanAction(ctx, req)
}

// InvokeAction runs the action in flight in the plugin's lifetime until its stream has ended:
// the call returns at once and the framework runs the action in a goroutine of its own under
// ctx while Terraform reads the stream, so the lifetime's call is the stream, not the call. When
// Terraform stops reading (it is gone, or its stream ended), the action is cancelled and its
// events are still drained to the end: the framework sends progress on a channel nobody else
// reads, and an action left sending would block for ever with whatever it holds.
func (s *ProtocolServer) InvokeAction(ctx context.Context, req *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	ctx, done := s.Life.Enter(ctx)
	ctx, cancel := context.WithCancel(ctx)
	stream, err := s.actions().InvokeAction(ctx, req)
	if err != nil || stream == nil || stream.Events == nil {
		cancel()
		done()
		return stream, err
	}
	events := stream.Events
	stream.Events = func(push func(tfprotov6.InvokeActionEvent) bool) {
		defer done()
		defer cancel()
		listening := true
		for ev := range events {
			if listening && !push(ev) {
				listening = false
				cancel()
			}
		}
	}
	return stream, nil
}
