package temporal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// payloadName is the message every payload Temporal holds travels in
// (Payloads, Memo, Header, SearchAttributes and UserMetadata hold it);
// blobName is the encoded events a raw history holds, payloads and all.
var (
	payloadName = (&commonpb.Payload{}).ProtoReflect().Descriptor().FullName()
	blobName    = (&commonpb.DataBlob{}).ProtoReflect().Descriptor().FullName()
)

// emptied says whether a field of message type name is written empty.
func emptied(name protoreflect.FullName) bool { return name == payloadName || name == blobName }

// payloadsUndecoded is the gRPC codec of porthole's reads: a request is
// marshalled by gRPC's own proto codec; an answer that can hold a payload
// has every Payload message in it (and every DataBlob, a raw history's
// encoded events) emptied on the wire before it is unmarshalled, and its
// fields this API does not know are dropped, not kept as unknown bytes.
// porthole never reads a payload (convert.go's rule), so its bytes are
// never decoded into memory a result could reach, and an answer full of
// inputs, results, memos and heartbeat details costs what its other fields
// cost to decode. The keys of a map of payloads (search attributes'
// names) and the number of a list's payloads are kept. A payload that is
// itself malformed is not looked at, so not refused.
type payloadsUndecoded struct{}

// protoCodec is gRPC's proto codec, which the requests use.
var protoCodec = encoding.GetCodecV2(grpcproto.Name)

// Name is empty: gRPC then sends the content type it sends with its own
// codec (application/grpc), not one naming this codec.
func (payloadsUndecoded) Name() string { return "" }

func (payloadsUndecoded) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (payloadsUndecoded) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok || !holdsPayload(m.ProtoReflect().Descriptor()) {
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
	b, err := withoutPayloads((*held)[:0], buf.ReadOnlyData(), m.ProtoReflect().Descriptor(), 0)
	*held = b[:0]
	if err != nil {
		return fmt.Errorf("an answer from Temporal that is not a %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
}

// strippedBuffers holds the buffers answers are emptied of payloads into;
// one over maxHeldStripped (a history page of large events) is let go.
var strippedBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxHeldStripped = 4 << 20

// errTooDeep refuses an answer nested deeper than protobuf itself reads.
var errTooDeep = errors.New("nested deeper than protobuf's recursion limit")

// withoutPayloads appends to dst the message b, of type md at nesting
// depth, as it is on the wire but with every field of type Payload or
// DataBlob written empty and every field md does not declare left out. A
// field whose type holds neither, however deep, is copied as it is.
func withoutPayloads(dst, b []byte, md protoreflect.MessageDescriptor, depth int) ([]byte, error) {
	if depth > protowire.DefaultRecursionLimit {
		// proto.Unmarshal would refuse it; the walk must not first
		// exhaust the stack on it.
		return dst, errTooDeep
	}
	plan := planFor(md)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return dst, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return dst, protowire.ParseError(m)
		}
		fd := plan.fields.ByNumber(num)
		switch {
		case fd == nil:
			// Unknown to this API (a newer server's field, which could
			// hold a payload): dropped, as DiscardUnknown would.
		case typ != protowire.BytesType || plan.actions[fd.Index()] == copyField:
			dst = append(dst, b[:n+m]...)
		case plan.actions[fd.Index()] == emptyField:
			dst = protowire.AppendVarint(append(dst, b[:n]...), 0)
		default:
			v, _ := protowire.ConsumeBytes(b[n:])
			var err error
			if dst, err = appendNested(append(dst, b[:n]...), v, fd.Message(), depth+1); err != nil {
				return dst, err
			}
		}
		b = b[n+m:]
	}
	return dst, nil
}

// appendNested appends v, a message of type md, emptied of payloads, with
// its length before it. The length is at most v's, so it is written in
// the room v's length took, as a varint padded to fill it (protobuf reads
// a padded varint as its value): nothing written after it ever moves,
// however deep the nesting.
func appendNested(dst, v []byte, md protoreflect.MessageDescriptor, depth int) ([]byte, error) {
	var zeros [binaryMaxVarintLen]byte
	at, room := len(dst), protowire.SizeVarint(uint64(len(v)))
	dst = append(dst, zeros[:room]...)
	body := len(dst)
	dst, err := withoutPayloads(dst, v, md, depth)
	if err != nil {
		return dst, err
	}
	putPaddedVarint(dst[at:body], uint64(len(dst)-body))
	return dst, nil
}

// putPaddedVarint writes x into all of room as a varint: every byte but
// the last carries the continuation bit. x must fit in 7 bits a byte.
func putPaddedVarint(room []byte, x uint64) {
	for i := range room[:len(room)-1] {
		room[i] = byte(x&0x7f) | 0x80
		x >>= 7
	}
	room[len(room)-1] = byte(x)
}

// binaryMaxVarintLen is the longest a varint is.
const binaryMaxVarintLen = 10

// fieldAction is what the walk does with a field of a message type.
type fieldAction uint8

const (
	copyField  fieldAction = iota // its type holds no payload: copied as it is
	emptyField                    // a Payload or a DataBlob: written empty
	nestField                     // a message that can hold one: walked
)

// walkPlan is a message type's fields and, by index, what the walk does
// with each: decided once per type, not for each field the walk meets.
type walkPlan struct {
	fields  protoreflect.FieldDescriptors
	actions []fieldAction
}

// plans caches planFor by message descriptor.
var plans sync.Map // protoreflect.MessageDescriptor -> *walkPlan

func planFor(md protoreflect.MessageDescriptor) *walkPlan {
	if p, ok := plans.Load(md); ok {
		return p.(*walkPlan)
	}
	fields := md.Fields()
	p := &walkPlan{fields: fields, actions: make([]fieldAction, fields.Len())}
	for i := range fields.Len() {
		switch f := fields.Get(i); {
		case f.Kind() != protoreflect.MessageKind:
		case emptied(f.Message().FullName()):
			p.actions[i] = emptyField
		case holdsPayload(f.Message()):
			p.actions[i] = nestField
		}
	}
	plans.Store(md, p)
	return p
}

// holdsPayloadOf caches holdsPayload by message descriptor: the walk asks
// for every field it meets, and a descriptor hashes as a pointer, where
// its full name would hash as a long string.
var holdsPayloadOf sync.Map // protoreflect.MessageDescriptor -> bool

// holdsPayload says whether a message of type md can hold a Payload or a
// DataBlob, in a field of its own or of a message within it.
func holdsPayload(md protoreflect.MessageDescriptor) bool {
	if v, ok := holdsPayloadOf.Load(md); ok {
		return v.(bool)
	}
	holds := reaches(md, map[protoreflect.FullName]bool{})
	holdsPayloadOf.Store(md, holds)
	return holds
}

// reaches walks md's message fields depth first, each type once (a
// failure holds its cause, a failure).
func reaches(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if emptied(md.FullName()) {
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
// porthole makes with payloadsUndecoded (which leaves an answer that can
// hold no payload to gRPC's codec).
func undecodedPayloads(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	// A copy of opts: the caller's slice is not appended to.
	return invoker(ctx, method, req, reply, cc, append(opts[:len(opts):len(opts)], grpc.ForceCodecV2(payloadsUndecoded{}))...)
}
