package temporal

import (
	"context"
	"fmt"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// payloadName is the message every payload Temporal holds travels in
// (Payloads, Memo, Header, SearchAttributes and UserMetadata hold it).
var payloadName = (&commonpb.Payload{}).ProtoReflect().Descriptor().FullName()

// payloadsUndecoded is the gRPC codec of porthole's reads: a request is
// marshalled by gRPC's own proto codec; an answer has every Payload
// message in it emptied on the wire before it is unmarshalled. porthole
// never reads a payload (convert.go's rule), so its bytes are never
// decoded into memory a result could reach, and an answer full of inputs,
// results, memos and heartbeat details costs what its other fields cost
// to decode. The keys of a map of payloads (search attributes' names) and
// the number of a list's payloads are kept.
type payloadsUndecoded struct{}

// protoCodec is gRPC's proto codec, which the requests use.
var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (payloadsUndecoded) Name() string { return grpcproto.Name }

func (payloadsUndecoded) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (payloadsUndecoded) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	held := strippedBuffers.Get().(*[]byte)
	defer func() {
		if cap(*held) <= maxHeldStripped {
			strippedBuffers.Put(held)
		}
	}()
	b, err := withoutPayloads((*held)[:0], buf.ReadOnlyData(), m.ProtoReflect().Descriptor())
	*held = b[:0]
	if err != nil {
		return fmt.Errorf("an answer from Temporal that is not a %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return proto.Unmarshal(b, m)
}

// strippedBuffers holds the buffers answers are emptied of payloads into;
// one over maxHeldStripped (a history page of large events) is let go.
var strippedBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxHeldStripped = 4 << 20

// withoutPayloads appends to dst the message b, of type md, as it is on
// the wire but with every field of type Payload written empty. A field
// whose type holds no payload, however deep, is copied as it is; an
// unknown field too.
func withoutPayloads(dst, b []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	fields := md.Fields()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dst, protowire.ParseError(n)
		}
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				return dst, protowire.ParseError(m)
			}
			dst, b = append(dst, b[:n+m]...), b[n+m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return dst, protowire.ParseError(m)
		}
		fd := fields.ByNumber(num)
		switch {
		case fd == nil || fd.Kind() != protoreflect.MessageKind || !holdsPayload(fd.Message()):
			dst = append(dst, b[:n+m]...)
		case fd.Message().FullName() == payloadName:
			dst = protowire.AppendVarint(append(dst, b[:n]...), 0)
		default:
			var err error
			if dst, err = appendNested(append(dst, b[:n]...), v, fd.Message()); err != nil {
				return dst, err
			}
		}
		b = b[n+m:]
	}
	return dst, nil
}

// appendNested appends v, a message of type md, emptied of payloads, with
// its length before it. The length is at most v's, so its varint is given
// v's length's room and moved back when it needs less.
func appendNested(dst, v []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	var zeros [binaryMaxVarintLen]byte
	at, room := len(dst), protowire.SizeVarint(uint64(len(v)))
	dst = append(dst, zeros[:room]...)
	body := len(dst)
	dst, err := withoutPayloads(dst, v, md)
	if err != nil {
		return dst, err
	}
	n := len(dst) - body
	if need := protowire.SizeVarint(uint64(n)); need < room {
		copy(dst[at+need:], dst[body:])
		dst = dst[:len(dst)-(room-need)]
	}
	protowire.AppendVarint(dst[at:at], uint64(n))
	return dst, nil
}

// binaryMaxVarintLen is the longest a varint is.
const binaryMaxVarintLen = 10

// holdsPayloadOf caches holdsPayload by message type.
var holdsPayloadOf sync.Map // protoreflect.FullName -> bool

// holdsPayload says whether a message of type md can hold a Payload, in a
// field of its own or of a message within it.
func holdsPayload(md protoreflect.MessageDescriptor) bool {
	if v, ok := holdsPayloadOf.Load(md.FullName()); ok {
		return v.(bool)
	}
	holds := reaches(md, map[protoreflect.FullName]bool{})
	holdsPayloadOf.Store(md.FullName(), holds)
	return holds
}

// reaches walks md's message fields depth first, each type once (a
// failure holds its cause, a failure).
func reaches(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == payloadName {
		return true
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); f.Kind() == protoreflect.MessageKind && !seen[f.Message().FullName()] && reaches(f.Message(), seen) {
			return true
		}
	}
	return false
}

// undecodedPayloads is a unary client interceptor that answers every read
// porthole makes with payloadsUndecoded; the SDK's handshake and the
// namespace's description, which hold no payloads, keep gRPC's codec.
func undecodedPayloads(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch method {
	case workflowservice.WorkflowService_GetSystemInfo_FullMethodName, workflowservice.WorkflowService_DescribeNamespace_FullMethodName:
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	// A copy of opts: the caller's slice is not appended to.
	return invoker(ctx, method, req, reply, cc, append(opts[:len(opts):len(opts)], grpc.ForceCodecV2(payloadsUndecoded{}))...)
}
