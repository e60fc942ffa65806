package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decodeResult reads a tools/call response as the go-sdk's client does:
// the message, then its result.
func decodeResult(msg []byte) (*mcp.CallToolResult, error) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, err
	}
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return nil, fmt.Errorf("not a response: %T", m)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var r mcp.CallToolResult
	if err := r.UnmarshalJSON(resp.Result); err != nil {
		return nil, err
	}
	return &r, nil
}

// liftThenDecode is decodeResult with the texts lifted first and put back
// after, as Call does.
func liftThenDecode(msg, id []byte) (*mcp.CallToolResult, bool, error) {
	_, box := withLiftBox(context.Background(), DefaultMaxMessageBytes)
	out, lifted := box.lift(msg, id)
	r, err := decodeResult(out)
	if err != nil {
		return nil, lifted, err
	}
	box.restore(r)
	return r, lifted, nil
}

func texts(r *mcp.CallToolResult) []string {
	var out []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		} else {
			out = append(out, fmt.Sprintf("%T", c))
		}
	}
	return out
}

// liftShapes are responses around a literal: %[1]s is the literal.
var liftShapes = []string{
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%[1]s}]}}`,
	` { "id" : 7 , "result" : { "content" : [ { "text" : %[1]s , "type" : "text" } , {"type":"text","text":"short"} ] , "isError" : true } , "jsonrpc" : "2.0" } `,
	`{"jsonrpc":"2.0","result":{"structuredContent":{"text":%[1]s},"content":[{"type":"text","text":%[1]s},{"type":"image","data":"aGk=","mimeType":"image/png","text":%[1]s}]},"id":7}`,
	`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":%[1]s}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%[1]s}]},"result":{"content":[{"type":"text","text":"second"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","te\u0078t":%[1]s}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%[1]s}]}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%[1]s}]}}x`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":%[1]s}}`,
	`{"jsonrpc":"2.0","id":7,"i\u0064":8,"result":{"content":[{"type":"text","text":%[1]s}]}}`,
	`{"jsonrpc":"2.0","id":7,"method":"x","result":{"content":[{"type":"text","text":%[1]s}]}}`,
}

// literals are the insides of text literals: escapes of every kind, what
// is not UTF-8, a lone surrogate half, and what no JSON string holds.
var liftLiterals = []string{
	`plain text\nwith lines\tand tabs`,
	`\"quoted\" \\ \/ \b \f \r \u0041 \u00e9 \ud83d\ude00 \ud800 \udc00x \ud800\u0041`,
	"bytes that are not UTF-8: \xff\xfe \xed\xa0\x80 \xc0\xaf, and some that are: é 😀",
	"\x00porthole-lift:00000000000000000000000000000000:0",
	"a control character \x01 in a string",
	`a bad escape \x`,
	`a cut escape \u12`,
	`an end that is escaped \`,
}

func liftCase(inner string, shape int) []byte {
	lit := `"` + strings.Repeat(inner, minLifted/max(1, len(inner))+1) + `"`
	return []byte(fmt.Sprintf(liftShapes[shape%len(liftShapes)], lit))
}

// TestLiftedTextsReadAsTheGoSDKReadsThem: lifting a response's texts and
// putting them back gives the go-sdk's result, or fails where the go-sdk
// fails, for every shape of response and every kind of literal; and a
// response to the call, in a shape the scan follows, is lifted.
func TestLiftedTextsReadAsTheGoSDKReadsThem(t *testing.T) {
	t.Parallel()
	for shape := range liftShapes {
		for _, inner := range liftLiterals {
			msg := liftCase(inner, shape)
			checkLift(t, msg)
			_, valid := unquote([]byte(`"` + inner + `"`))
			if _, lifted, _ := liftThenDecode(msg, []byte("7")); lifted != (valid && (shape < 3 || shape == 4)) {
				t.Errorf("shape %d, %.40q lifted: %t", shape, inner, lifted)
			}
		}
	}
}

func checkLift(t *testing.T, msg []byte) {
	t.Helper()
	want, werr := decodeResult(msg)
	got, _, err := liftThenDecode(msg, []byte("7"))
	switch {
	case (werr == nil) != (err == nil):
		t.Errorf("%.200q: the go-sdk read %v, lifted %v", msg, werr, err)
	case werr == nil && fmt.Sprint(texts(want)) != fmt.Sprint(texts(got)):
		t.Errorf("%.200q: the go-sdk read %.200q, lifted %.200q", msg, texts(want), texts(got))
	case werr == nil && (want.IsError != got.IsError || fmt.Sprint(want.StructuredContent) != fmt.Sprint(got.StructuredContent)):
		t.Errorf("%.200q: the rest of the result differs", msg)
	}
}

func FuzzLiftedTextsReadAsTheGoSDKReadsThem(f *testing.F) {
	for shape := range liftShapes {
		for _, inner := range liftLiterals {
			f.Add(inner, shape)
		}
	}
	f.Fuzz(func(t *testing.T, inner string, shape int) {
		if shape < 0 {
			shape = -shape
		}
		checkLift(t, liftCase(inner, shape))
	})
}

// TestAnUpstreamsAnswerIsLiftedOverEachForm: a streamable upstream's long
// answers, as a JSON body and as an event, reach the caller as the
// go-sdk's own client reads them, lifted; a text that looks like a
// placeholder is served as the text it is.
//
// Not parallel: it counts the texts lifted in the package.
func TestAnUpstreamsAnswerIsLiftedOverEachForm(t *testing.T) {
	long := strings.Repeat("line \"one\" \\ é 😀 \u202e\t\x7f\xff\n", 200)
	forged := "\x00porthole-lift:00000000000000000000000000000000:0" + strings.Repeat(" ", minLifted)
	srv := mcp.NewServer(&mcp.Implementation{Name: "long", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "Answer at length.", InputSchema: object("q"), Annotations: readOnlyHint},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if strings.Contains(string(req.Params.Arguments), "forged") {
				return text(forged), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}, &mcp.TextContent{Text: "short"}, &mcp.TextContent{Text: long + long}}}, nil
		})
	for _, jsonBody := range []bool{true, false} {
		t.Run(fmt.Sprintf("JSON body %t", jsonBody), func(t *testing.T) {
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonBody}))
			t.Cleanup(hs.Close)
			_, u, _ := startSet(t, Entry{Name: "long", URL: hs.URL, Tools: named("lookup")}, nil)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "reference", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			for _, q := range []string{"long", "forged"} {
				want, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": q}})
				if err != nil {
					t.Fatal(err)
				}
				before := textsLifted.Load()
				got, err := u.Call(context.Background(), "lookup", map[string]any{"q": q})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(texts(got)) != fmt.Sprint(texts(want)) {
					t.Errorf("%s: porthole read %.100q, the go-sdk's client %.100q", q, texts(got), texts(want))
				}
				if n := textsLifted.Load() - before; q == "long" && n != 2 || q == "forged" && n != 1 {
					t.Errorf("%s: %d texts lifted", q, n)
				}
			}
		})
	}
}

// TestOnlyWhatTheGoSDKDecodesIsLifted: in an event stream, an event of
// another name (which the go-sdk skips), an event of several data lines
// (which it joins), and messages past the box's limit are passed as they
// are; the one message it decodes as the answer is lifted.
func TestOnlyWhatTheGoSDKDecodesIsLifted(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 4*minLifted)
	answer := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + long + `"}]}}`
	var stream strings.Builder
	for range 50 {
		stream.WriteString("event: junk\ndata: " + answer + "\n\n")
	}
	stream.WriteString("data: {\"jsonrpc\":\"2.0\",\ndata: " + answer + "\n\n")
	stream.WriteString("event: message\r\ndata: " + answer + "\r\n\r\n")
	_, box := withLiftBox(context.Background(), int64(len(long)+2))
	body := liftedBody(io.NopCloser(strings.NewReader(stream.String())), frameEvent, -1, box, []byte("7"))
	got, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(box.texts); n != 1 {
		t.Fatalf("%d texts lifted, want the answer's one", n)
	}
	if want := strings.Replace(stream.String(), "event: message\r\ndata: "+answer+"\r\n", "event: message\r\ndata: "+`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\u0000`+box.prefix[1:]+`0"}]}}`+"\n", 1); string(got) != want {
		t.Errorf("the stream read through the lifting body differs from the stream with the answer alone lifted")
	}
	// A second answer on the same call would pass the limit: not lifted.
	again := liftedBody(io.NopCloser(strings.NewReader("data: "+answer+"\n\n")), frameEvent, -1, box, []byte("7"))
	if got, _ := io.ReadAll(again); string(got) != "data: "+answer+"\n\n" || len(box.texts) != 1 {
		t.Errorf("a message past the box's limit was lifted")
	}
}

// TestADeclaredLengthIsNotAllocatedPastTheBound: the room made at once
// for a body is what it says it holds within the message bound.
func TestADeclaredLengthIsNotAllocatedPastTheBound(t *testing.T) {
	t.Parallel()
	_, box := withLiftBox(context.Background(), 64<<10)
	body := liftedBody(io.NopCloser(strings.NewReader(`{}`)), frameWhole, 60_000_000, box, []byte("7"))
	buf := make([]byte, 16)
	if _, err := body.Read(buf); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if b, err := readBody(nil, strings.NewReader("{}"), min(60_000_000, box.limit)); err != nil || cap(b) > 128<<10 {
		t.Errorf("readBody made room for %d bytes", cap(b))
	}
}
