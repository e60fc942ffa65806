package temporal

import (
	"bytes"
	"context"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func payload(s string) *commonpb.Payload {
	return &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"` + s + `"`)}
}

// richAnswers are answers of the reads with payloads in every kind of
// place: a memo, search attributes (with the division porthole hides by),
// user metadata, headers, inputs and results, a failure's encoded
// attributes and its cause's details, pending activities' heartbeats.
func richAnswers() []proto.Message {
	now := timestamppb.New(time.Unix(1_700_000_000, 0))
	failure := &failurepb.Failure{Message: "it broke", StackTrace: "at x", EncodedAttributes: payload("secret-msg"),
		Cause: &failurepb.Failure{Message: "the cause", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
			Type: "E", Details: &commonpb.Payloads{Payloads: []*commonpb.Payload{payload("detail-1"), payload("detail-2")}}}}}}
	sa := &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{"TemporalNamespaceDivision": payload("TemporalScheduler"), "CustomerId": payload("c-4711")}}
	describe := &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
			Execution: &commonpb.WorkflowExecution{WorkflowId: "order-1", RunId: "r1"}, Type: &commonpb.WorkflowType{Name: "Order"},
			StartTime: now, Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, HistoryLength: 12,
			Memo: &commonpb.Memo{Fields: map[string]*commonpb.Payload{"note": payload("memo-secret")}}, SearchAttributes: sa,
		},
		PendingActivities: []*workflowpb.PendingActivityInfo{{ActivityId: "a1", HeartbeatDetails: &commonpb.Payloads{Payloads: []*commonpb.Payload{payload("hb")}}, LastFailure: failure}},
		ExecutionConfig:   &workflowpb.WorkflowExecutionConfig{UserMetadata: &sdkpb.UserMetadata{Summary: payload("summary"), Details: payload("details")}},
	}
	history := &workflowservice.GetWorkflowExecutionHistoryResponse{History: &historypb.History{Events: []*historypb.HistoryEvent{
		{EventId: 1, EventTime: now, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{WorkflowType: &commonpb.WorkflowType{Name: "Order"},
				Input: &commonpb.Payloads{Payloads: []*commonpb.Payload{payload(string(make([]byte, 300)))}}, SearchAttributes: sa,
				Header: &commonpb.Header{Fields: map[string]*commonpb.Payload{"tracing": payload("h")}}}}},
		{EventId: 2, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, Attributes: &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{
			WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{Failure: failure}}},
		{EventId: 3, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{payload("result")}}, Identity: "worker@host"}}},
	}}, NextPageToken: []byte("next")}
	list := &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{describe.WorkflowExecutionInfo, describe.WorkflowExecutionInfo}, NextPageToken: []byte("t")}
	return []proto.Message{describe, history, list}
}

// emptied is m with every Payload in it replaced by an empty one, as
// protoreflect walks it.
func emptied(m proto.Message) proto.Message {
	c := proto.Clone(m)
	var walk func(protoreflect.Message)
	walk = func(r protoreflect.Message) {
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					if mv.Message().Descriptor().FullName() == payloadName {
						v.Map().Set(k, protoreflect.ValueOfMessage((&commonpb.Payload{}).ProtoReflect()))
					} else {
						walk(mv.Message())
					}
					return true
				})
			case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
				for i := 0; i < v.List().Len(); i++ {
					if fd.Message().FullName() == payloadName {
						v.List().Set(i, protoreflect.ValueOfMessage((&commonpb.Payload{}).ProtoReflect()))
					} else {
						walk(v.List().Get(i).Message())
					}
				}
			case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
				if fd.Message().FullName() == payloadName {
					r.Set(fd, protoreflect.ValueOfMessage((&commonpb.Payload{}).ProtoReflect()))
				} else {
					walk(v.Message())
				}
			}
			return true
		})
	}
	walk(c.ProtoReflect())
	return c
}

// undecode unmarshals b into a new message of m's type with
// payloadsUndecoded.
func undecode(t testing.TB, m proto.Message, b []byte) (proto.Message, error) {
	t.Helper()
	out := m.ProtoReflect().New().Interface()
	return out, payloadsUndecoded{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, out)
}

// TestAnAnswersPayloadsAreNeverDecoded: each read's answer, unmarshalled
// by porthole's codec, is the answer with every payload empty and nothing
// else changed: the search attributes' names (by which porthole hides the
// system's workflows), failures' messages, identities and page tokens are
// kept; no payload's bytes are in it.
func TestAnAnswersPayloadsAreNeverDecoded(t *testing.T) {
	for _, m := range richAnswers() {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := undecode(t, m, b)
		if err != nil {
			t.Fatal(err)
		}
		if want := emptied(m); !proto.Equal(got, want) {
			t.Fatalf("%T:\n got %v\nwant %v", m, got, want)
		}
		wire, _ := proto.Marshal(got)
		for _, secret := range []string{"memo-secret", "TemporalScheduler", "c-4711", "secret-msg", "detail-1", "hb", "summary", "result", "json/plain"} {
			if bytes.Contains(wire, []byte(secret)) {
				t.Errorf("%T still holds %q", m, secret)
			}
		}
	}
	d, _ := undecode(t, richAnswers()[0], mustMarshal(t, richAnswers()[0]))
	if !hidden(d.(*workflowservice.DescribeWorkflowExecutionResponse).GetWorkflowExecutionInfo().GetSearchAttributes()) {
		t.Fatal("the division's search attribute is gone: a hidden workflow would be shown")
	}
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzPayloadsUndecodedReadsWhatProtoReads: any bytes proto.Unmarshal
// takes as one of the answers, the codec takes too, as the same answer
// with its payloads emptied; bytes it refuses, the codec refuses or reads
// without a payload.
func FuzzPayloadsUndecodedReadsWhatProtoReads(f *testing.F) {
	for _, m := range richAnswers() {
		f.Add(mustMarshal(f, m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range richAnswers() {
			want := m.ProtoReflect().New().Interface()
			if proto.Unmarshal(b, want) != nil {
				continue
			}
			got, err := undecode(t, m, b)
			if err != nil {
				t.Fatalf("%T: proto reads it, the codec refuses it: %v", m, err)
			}
			if w := emptied(want); !proto.Equal(got, w) {
				t.Fatalf("%T:\n got %v\nwant %v", m, got, w)
			}
		}
	})
}

// BenchmarkHistoryPageDecoding is a page of 500 history events, each with
// a 1 KiB input, unmarshalled by gRPC's codec and by porthole's.
func BenchmarkHistoryPageDecoding(b *testing.B) {
	h := richAnswers()[1].(*workflowservice.GetWorkflowExecutionHistoryResponse)
	events := h.History.Events
	for len(h.History.Events) < 500 {
		for _, e := range events {
			e = proto.Clone(e).(*historypb.HistoryEvent)
			if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				a.Input.Payloads[0].Data = make([]byte, 1024)
			}
			h.History.Events = append(h.History.Events, e)
		}
	}
	wire := mustMarshal(b, h)
	for _, c := range []struct {
		name  string
		codec interface {
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"grpc", protoCodec}, {"payloads-undecoded", payloadsUndecoded{}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &workflowservice.GetWorkflowExecutionHistoryResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEveryReadButTheHandshakeIsAnsweredWithPayloadsUndecoded: the
// interceptor on porthole's connection gives every read the codec, and
// leaves the SDK's handshake and the namespace's description gRPC's.
func TestEveryReadButTheHandshakeIsAnsweredWithPayloadsUndecoded(t *testing.T) {
	for method := range allowedRPCs {
		var forced bool
		_ = undecodedPayloads(context.Background(), method, nil, nil, nil, func(_ context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
			for _, o := range opts {
				if c, ok := o.(grpc.ForceCodecV2CallOption); ok {
					_, forced = c.CodecV2.(payloadsUndecoded)
				}
			}
			return nil
		})
		handshake := method == workflowservice.WorkflowService_GetSystemInfo_FullMethodName || method == workflowservice.WorkflowService_DescribeNamespace_FullMethodName
		if forced == handshake {
			t.Errorf("%s: payloads undecoded %v", method, forced)
		}
	}
}
