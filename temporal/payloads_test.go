package temporal

import (
	"bytes"
	"context"
	"strings"
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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
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
	}}, NextPageToken: []byte("next"), RawHistory: []*commonpb.DataBlob{{EncodingType: enumspb.ENCODING_TYPE_PROTO3, Data: []byte("raw-events-with-payloads")}}}
	list := &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{describe.WorkflowExecutionInfo, describe.WorkflowExecutionInfo}, NextPageToken: []byte("t")}
	return []proto.Message{describe, history, list}
}

// withPayloadsEmptied is m with every Payload and DataBlob in it replaced
// by an empty one, as protoreflect walks it.
func withPayloadsEmptied(m proto.Message) proto.Message {
	c := proto.Clone(m)
	var walk func(protoreflect.Message)
	walk = func(r protoreflect.Message) {
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
				v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
					if n := mv.Message().Descriptor().FullName(); emptied(n) {
						v.Map().Set(k, protoreflect.ValueOfMessage(mv.Message().New()))
					} else {
						walk(mv.Message())
					}
					return true
				})
			case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
				for i := 0; i < v.List().Len(); i++ {
					if emptied(fd.Message().FullName()) {
						v.List().Set(i, protoreflect.ValueOfMessage(v.List().Get(i).Message().New()))
					} else {
						walk(v.List().Get(i).Message())
					}
				}
			case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
				if emptied(fd.Message().FullName()) {
					r.Set(fd, protoreflect.ValueOfMessage(v.Message().New()))
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
		if want := withPayloadsEmptied(m); !proto.Equal(got, want) {
			t.Fatalf("%T:\n got %v\nwant %v", m, got, want)
		}
		wire, _ := proto.Marshal(got)
		for _, secret := range []string{"raw-events-with-payloads", "memo-secret", "TemporalScheduler", "c-4711", "secret-msg", "detail-1", "hb", "summary", "result", "json/plain"} {
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
		panic(err)
	}
	return b
}

// FuzzPayloadsUndecodedReadsWhatProtoReads: any bytes proto.Unmarshal
// takes as one of the answers (its unknown fields dropped), the codec
// takes too, as the same answer with its payloads emptied; bytes it
// refuses, the codec refuses or reads without a payload.
func FuzzPayloadsUndecodedReadsWhatProtoReads(f *testing.F) {
	for _, m := range richAnswers() {
		f.Add(mustMarshal(f, m))
	}
	f.Add(deepFailure(20, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range append(richAnswers(), &failurepb.Failure{}) {
			want := m.ProtoReflect().New().Interface()
			if (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, want) != nil {
				continue
			}
			got, err := undecode(t, m, b)
			if err != nil {
				t.Fatalf("%T: proto reads it, the codec refuses it: %v", m, err)
			}
			if w := withPayloadsEmptied(want); !proto.Equal(got, w) {
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

// TestEveryReadIsAnsweredWithPayloadsUndecoded: the interceptor gives
// every RPC porthole's connection may make the codec (which leaves an
// answer that can hold no payload to gRPC's).
func TestEveryReadIsAnsweredWithPayloadsUndecoded(t *testing.T) {
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
		if !forced {
			t.Errorf("%s: answered without payloadsUndecoded", method)
		}
	}
}

// TestTheDialedConnectionDecodesNoPayload: reads through the connection
// Dial makes, below every porthole type, of the seeded workflows (every
// payload a canary): no canary is in what is decoded, and the search
// attributes' names are.
func TestTheDialedConnectionDecodesNoPayload(t *testing.T) {
	t.Parallel()
	a := dialTest(t)
	ctx := context.Background()
	var answers []proto.Message
	for _, id := range []string{temporaltest.CompletedWorkflowID, temporaltest.RunningWorkflowID, temporaltest.FailedWorkflowID} {
		d, err := a.client.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{Namespace: a.namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
		if err != nil {
			t.Fatal(err)
		}
		h, err := a.client.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{Namespace: a.namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, d, h)
	}
	l, err := a.client.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: a.namespace, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, l)
	names := 0
	for _, m := range answers {
		if b := mustMarshal(t, m); bytes.Contains(b, []byte(temporaltest.CanaryPrefix)) {
			t.Fatalf("a %T decoded through the dialed connection holds a canary", m)
		}
	}
	for _, e := range l.GetExecutions() {
		if _, ok := e.GetSearchAttributes().GetIndexedFields()[temporaltest.CustomSearchAttribute]; ok {
			names++
		}
	}
	if names == 0 {
		t.Fatal("no listed workflow names the seeded search attribute: its name was dropped with its value")
	}
}

// deepFailure is a Failure whose cause is a failure, depth times, the
// deepest with a message of size bytes and an encoded payload, written on
// the wire directly (each level's length known before its body).
func deepFailure(depth, size int) []byte {
	cause := protowire.Number((&failurepb.Failure{}).ProtoReflect().Descriptor().Fields().ByName("cause").Number())
	bottom := mustMarshal(nil, &failurepb.Failure{Message: strings.Repeat("m", size), EncodedAttributes: payload(strings.Repeat("p", size))})
	sizes := make([]int, depth+1)
	sizes[0] = len(bottom)
	for i := 1; i <= depth; i++ {
		sizes[i] = protowire.SizeTag(cause) + protowire.SizeBytes(sizes[i-1])
	}
	b := make([]byte, 0, sizes[depth])
	for i := depth; i >= 1; i-- {
		b = protowire.AppendVarint(protowire.AppendTag(b, cause, protowire.BytesType), uint64(sizes[i-1]))
	}
	return append(b, bottom...)
}

// TestADeepAnswerIsReadOrRefusedAsProtobufDoes: a failure nested past
// protobuf's recursion limit is refused with an error (the walk does not
// exhaust the stack first); one nested 9,000 deep around a large payload
// is read, as proto reads it, with the payload empty.
func TestADeepAnswerIsReadOrRefusedAsProtobufDoes(t *testing.T) {
	t.Parallel()
	if _, err := undecode(t, &failurepb.Failure{}, deepFailure(protowire.DefaultRecursionLimit+10, 10)); err == nil {
		t.Fatal("a failure nested past the recursion limit was read")
	}
	b := deepFailure(9_000, 64<<10)
	want := &failurepb.Failure{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	got, err := undecode(t, want, b)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, withPayloadsEmptied(want)) {
		t.Fatal("a deep failure is not read as protobuf reads it, its payload emptied")
	}
}

// TestAFieldThisAPIDoesNotKnowIsDropped: a field a newer server might
// send, unknown to this API (which could hold a payload), is not kept.
func TestAFieldThisAPIDoesNotKnowIsDropped(t *testing.T) {
	t.Parallel()
	b := protowire.AppendBytes(protowire.AppendTag(mustMarshal(t, richAnswers()[0]), 9_999, protowire.BytesType), []byte("PORTHOLE-CANARY-unknown"))
	got, err := undecode(t, richAnswers()[0], b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ProtoReflect().GetUnknown()) != 0 || bytes.Contains(mustMarshal(t, got), []byte("PORTHOLE-CANARY-unknown")) {
		t.Fatal("an unknown field was kept")
	}
}
