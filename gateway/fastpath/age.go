package fastpath

import (
	"bytes"
	"encoding/json"
)

// WithAge writes "ageSeconds" into a result's JSON where encoding/json puts
// it: every result embeds read.Observation first, so its members open the
// object, and ageSeconds follows observedAt. The first `,"observedAt":"` is
// that member: inside a string literal every quote is escaped, so the
// sequence cannot occur there. ok is false for JSON of another shape.
func WithAge(b []byte, age float64) (aged []byte, ok bool) {
	const key = `,"observedAt":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 || !bytes.HasPrefix(b, []byte(`{"namespace":"`)) {
		return nil, false
	}
	j := bytes.IndexByte(b[i+len(key):], '"')
	if j < 0 {
		return nil, false
	}
	at := i + len(key) + j + 1
	num, err := json.Marshal(age)
	if err != nil {
		return nil, false
	}
	aged = make([]byte, 0, len(b)+len(`,"ageSeconds":`)+len(num))
	aged = append(aged, b[:at]...)
	aged = append(aged, `,"ageSeconds":`...)
	aged = append(aged, num...)
	return append(aged, b[at:]...), true
}
