// Package rpcdecode is porthole's one strict decoder of JSON-RPC request
// bodies: it admits exactly one request object and reads from it what the
// gateway decides on (method, tool, arguments, id), in one pass.
//
// # Trust model
//
// The body is untrusted bytes from a client that has passed authentication
// but nothing else. JSON decoders disagree on a key given twice (most take
// the last) and on keys in another case (Go's encoding/json, which
// porthole's tool handlers decode arguments with, matches them; the go-sdk's
// decoder does not), so {"name":"describe_workflow","NAME":"x"} could mean
// one thing to a check and another to the server that runs the call.
// [Decode] refuses duplicate and case-variant keys at every level, so a
// body it admits means one thing only; it reads the tool from "name"
// spelled exactly so, as the go-sdk reads it.
//
// # What it refuses
//
// Anything but one JSON object (batches, trailing data, an empty body),
// nesting deeper than [MaxDepth], a "jsonrpc" other than "2.0", a missing
// or empty method (responses), an id that is not a string, number or null,
// params that are not an object, a tools/call without a string name, and a
// member of the request other than jsonrpc, id, method and params. Each
// refusal is an [*Error] with a sentence for the client and the JSON-RPC
// code to answer with; nothing in it echoes more of the body than a key.
//
// # How it is checked
//
// FuzzDecodeAgreesWithReference holds Decode to a reference written with
// encoding/json's Decoder: the two accept and refuse the same bodies, with
// the same code, and read the same envelope. FuzzDecode holds that every
// admitted body has unique keys and the tool encoding/json reads.
//
// The HTTP middleware that reads the body under a size cap, audits a
// refusal and answers it stays in package gateway; this package only
// decides.
package rpcdecode
