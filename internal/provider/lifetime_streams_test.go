package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/virtfleet/terraform-provider-virt/internal/lifetime"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// streamingServer is a provider server whose action and list calls return a stream that works
// after the call has returned, as the framework's do: the action in a goroutine of its own that
// sends progress on a channel only the stream reads, the listing as the stream is read. Each
// records the context its work ran under.
type streamingServer struct {
	tfprotov6.ProviderServer
	started chan context.Context // the work's context, once it runs
}

func (f *streamingServer) ValidateActionConfig(context.Context, *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return &tfprotov6.ValidateActionConfigResponse{}, nil
}

func (f *streamingServer) PlanAction(context.Context, *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	return &tfprotov6.PlanActionResponse{}, nil
}

// InvokeAction runs an action that sends progress until its context ends.
func (f *streamingServer) InvokeAction(ctx context.Context, _ *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	return &tfprotov6.InvokeActionServerStream{Events: func(push func(tfprotov6.InvokeActionEvent) bool) {
		progress, completed := make(chan string), make(chan struct{})
		go func() {
			defer close(completed)
			f.started <- ctx
			for {
				select {
				case <-ctx.Done():
					return
				case progress <- "still working":
				}
			}
		}()
		for {
			select {
			case <-completed:
				push(tfprotov6.InvokeActionEvent{Type: &tfprotov6.CompletedInvokeActionEventType{}})
				return
			case msg := <-progress:
				if !push(tfprotov6.InvokeActionEvent{Type: &tfprotov6.ProgressInvokeActionEventType{Message: msg}}) {
					return
				}
			}
		}
	}}, nil
}

func (f *streamingServer) ValidateListResourceConfig(context.Context, *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	return &tfprotov6.ValidateListResourceConfigResponse{}, nil
}

// ListResource lists until its context ends, one result per host call.
func (f *streamingServer) ListResource(ctx context.Context, _ *tfprotov6.ListResourceRequest) (*tfprotov6.ListResourceServerStream, error) {
	return &tfprotov6.ListResourceServerStream{Results: func(push func(tfprotov6.ListResourceResult) bool) {
		f.started <- ctx
		for ctx.Err() == nil {
			if !push(tfprotov6.ListResourceResult{DisplayName: "one more"}) {
				return
			}
		}
	}}, nil
}

// An action's invocation and a list resource's stream are calls in flight until their stream has
// ended: when the plugin's lifetime ends (Terraform is gone) their work is cancelled, and End
// returns only once it has stopped.
func TestLifetime_endCancelsStreams(t *testing.T) {
	cases := map[string]func(s *protocol.ProtocolServer) (read func(), err error){
		"action": func(s *protocol.ProtocolServer) (func(), error) {
			stream, err := s.InvokeAction(context.Background(), &tfprotov6.InvokeActionRequest{})
			if err != nil {
				return nil, err
			}
			return func() {
				for range stream.Events {
				}
			}, nil
		},
		"list": func(s *protocol.ProtocolServer) (func(), error) {
			stream, err := s.ListResource(context.Background(), &tfprotov6.ListResourceRequest{TypeName: "virt_volume"})
			if err != nil {
				return nil, err
			}
			return func() {
				for range stream.Results {
				}
			}, nil
		},
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := &streamingServer{started: make(chan context.Context, 1)}
			life := lifetime.New()
			read, err := call(&protocol.ProtocolServer{ProviderServer: fake, Life: life})
			if err != nil {
				t.Fatal(err)
			}
			finished := make(chan struct{})
			go func() {
				// Terraform reading the stream, as long as it gives something.
				read()
				close(finished)
			}()
			work := <-fake.started
			if !life.End(nil) {
				t.Fatal("End reported calls still in flight")
			}
			// End has returned, so the stream's work must have seen its context end.
			select {
			case <-work.Done():
			default:
				t.Fatal("the stream's work runs on after the lifetime ended: its context is not cancelled")
			}
			<-finished
		})
	}
}

// A stream Terraform stops reading before its end takes its action down with it: the action is
// cancelled and its remaining events drained, and the call leaves flight.
func TestLifetime_actionStreamAbandonedByTerraform(t *testing.T) {
	t.Parallel()
	fake := &streamingServer{started: make(chan context.Context, 1)}
	life := lifetime.New()
	s := &protocol.ProtocolServer{ProviderServer: fake, Life: life}
	stream, err := s.InvokeAction(context.Background(), &tfprotov6.InvokeActionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range stream.Events {
		break // Terraform goes after the first event
	}
	work := <-fake.started
	select {
	case <-work.Done():
	default:
		t.Fatal("the action runs on after Terraform stopped reading its stream")
	}
	if !life.End(nil) {
		t.Fatal("End reported the abandoned action still in flight")
	}
}
