package fastpath

// GrowStack makes the calling goroutine's stack large enough for a tool
// call before the call is deep.
//
// The go-sdk runs each request on a goroutine of its own, which starts with
// the runtime's smallest stack (stdio, the legacy SSE transport, a
// 2026-07-28 call of an upstream's tool). A call porthole answers itself (answerPlainCalls) runs instead on
// net/http's connection goroutine, which keeps its stack from one
// keep-alive request to the next: there growStack mostly costs a check. A
// Temporal read goes some forty frames deep (the go-sdk's handler,
// porthole's middleware, the Temporal SDK's interceptors, gRPC), and each
// time it passes the stack's end the runtime copies the stack and walks
// every frame on it. Grown here, a handful of frames deep, the stack is
// copied once and cheaply; docs/performance.md gives the profile that
// showed the difference. The frame below is what makes the runtime grow
// the stack; nothing reads it.
//
//go:noinline
func GrowStack() {
	var frame [growStackBytes]byte
	if growStackNever {
		for i := range frame {
			frame[i] = byte(i)
		}
		stackSink = frame[len(frame)-1]
	}
}

// growStackBytes is sized so that the stack, under 2 KiB deep where
// GrowStack is called, grows to 16 KiB in one copy: enough for a Temporal
// read and the answer's rendering (a profile shows no further copy on that
// path).
const growStackBytes = 12 << 10

var (
	growStackNever bool // a condition the compiler cannot prove false
	//lint:ignore U1000 written, never read: the write keeps the frame real to the compiler
	stackSink byte
)
