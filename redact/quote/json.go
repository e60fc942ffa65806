package quote

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// JSON is a JSON value somebody else wrote (an upstream tool's structured
// content) together with who wrote it: the JSON counterpart of [Text].
type JSON struct {
	Origin Origin          `json:"origin" jsonschema:"who wrote the value: porthole-quoting-upstream:NAME for structured content from an upstream MCP server"`
	Value  json.RawMessage `json:"value" jsonschema:"the value, every string in it cleaned of control and invisible characters"`
}

// ErrJSONTooLarge is OfJSON's error for a value that, cleaned, is longer
// than its cap.
var ErrJSONTooLarge = errors.New("quote: the cleaned JSON value is past its cap")

// OfJSON wraps a JSON value somebody else wrote, as origin's, cleaned. raw
// must hold exactly one JSON value; the cleaned value must fit in max bytes.
//
// Security: a value is read the way a client reads it, so it can hold what
// a string can (bidi overrides, zero-width characters) and objects shaped
// like porthole's own origin-tagged text. So:
//
//   - every string, object keys included, is cleaned as quoted text is
//     (escapes made visible, lines kept, nothing cut: the whole value is
//     capped instead);
//   - an object member whose name is origin and whose string value claims
//     porthole's voice (porthole, Temporal's origin, another upstream's,
//     spelled however) gets origin as its value, so
//     {"text": "…", "origin": "porthole"} arrives as origin's words;
//   - numbers keep their text, and members their order.
//
// The cap is judged on the cleaned value, since escapes lengthen it: what
// fits as it arrived can be past the cap once cleaned. Cleaning stops as
// soon as it is.
func OfJSON(origin Origin, raw []byte, max int) (JSON, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep their text: no float rounds a large integer
	w := jsonWriter{origin: origin, max: max}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return JSON{}, fmt.Errorf("quote: reading a JSON value: %w", err)
		}
		if w.done {
			return JSON{}, errors.New("quote: more than one JSON value")
		}
		if err := w.token(tok); err != nil {
			return JSON{}, err
		}
	}
	if !w.done {
		return JSON{}, errors.New("quote: no whole JSON value")
	}
	return JSON{Origin: origin, Value: w.out.Bytes()}, nil
}

// jsonWriter writes a cleaned JSON value token by token. The decoder
// checks the syntax; the writer puts back the commas and colons it drops.
type jsonWriter struct {
	origin Origin
	max    int
	out    bytes.Buffer
	open   []container
	done   bool // a whole value has been written
}

// container is an object or array being written.
type container struct {
	object bool
	n      int  // members or elements written so far
	key    bool // an object's next string is a member name
	origin bool // the member being written is named origin
}

func (w *jsonWriter) token(tok json.Token) error {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' || t == '[' {
			w.separate()
			w.out.WriteByte(byte(t))
			w.open = append(w.open, container{object: t == '{', key: t == '{'})
			return w.check()
		}
		w.out.WriteByte(byte(t))
		w.open = w.open[:len(w.open)-1]
		w.ended()
	case string:
		if c := w.top(); c != nil && c.object && c.key {
			w.separate()
			w.writeString(t)
			w.out.WriteByte(':')
			c.key, c.origin = false, isOriginName(t)
			return w.check()
		}
		if c := w.top(); c != nil && c.origin && claimsPorthole(t) {
			t = string(w.origin)
		}
		w.separate()
		w.writeString(t)
		w.ended()
	case json.Number:
		w.separate()
		w.out.WriteString(string(t))
		w.ended()
	case bool:
		w.separate()
		w.out.WriteString(strconv.FormatBool(t))
		w.ended()
	case nil:
		w.separate()
		w.out.WriteString("null")
		w.ended()
	}
	return w.check()
}

func (w *jsonWriter) top() *container {
	if len(w.open) == 0 {
		return nil
	}
	return &w.open[len(w.open)-1]
}

// separate writes the comma before a member or an element that is not the
// first. A member's value follows its name's colon, with none.
func (w *jsonWriter) separate() {
	if c := w.top(); c != nil && (c.key || !c.object) && c.n > 0 {
		w.out.WriteByte(',')
	}
}

// ended records that a value was written: a member or an element of the
// container it is in, or the whole value.
func (w *jsonWriter) ended() {
	c := w.top()
	if c == nil {
		w.done = true
		return
	}
	c.n++
	c.key, c.origin = c.object, false
}

func (w *jsonWriter) writeString(s string) {
	cleaned, _, _ := clean(s, math.MaxInt, true)
	b, _ := json.Marshal(cleaned) // a string always marshals
	w.out.Write(b)
}

func (w *jsonWriter) check() error {
	if w.out.Len() > w.max {
		return ErrJSONTooLarge
	}
	return nil
}

// isOriginName reports whether a member name reads as origin: compared with
// invisible characters and spaces removed and case folded, as a reader
// would see it.
func isOriginName(name string) bool {
	return strings.EqualFold(legible(name, len("origin")+1), "origin")
}

// claimsPorthole reports whether an origin's value claims porthole's voice
// or a voice porthole quotes: porthole, porthole-quoting-temporal,
// porthole-quoting-upstream:NAME. Any value that begins with porthole once
// invisible characters and spaces are removed and case is folded does:
// "PORTHOLE", "port\u200Bhole" and " porthole" read as porthole to a model,
// and no upstream has a reason to write them. The upstream's own origin is
// one of them, and replacing it changes nothing.
//
// Letters of other scripts that look like Latin ones (a Cyrillic о) are
// not caught: the wrapper's origin still says whose the whole value is.
func claimsPorthole(s string) bool {
	return strings.EqualFold(legible(s, len(OriginPorthole)), string(OriginPorthole))
}

// legible is up to n of the first runes of s a reader sees: invisible
// characters (the ones clean escapes) and spaces removed.
func legible(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if n == 0 {
			break
		}
		if isHidden(r) || unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(r)
		n--
	}
	return b.String()
}
