package gateway

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/redact/quote"
)

// Types a result may reach. Structs must come from porthole's own module, so
// no protobuf message or other foreign type can sit inside a result.
var (
	timeType = reflect.TypeFor[time.Time]()
	textType = reflect.TypeFor[quote.Text]()
)

const ownModule = "github.com/porthole-dev/porthole/"

// payloadCarriers walks t and everything reachable from it and returns a
// sentence for each type that could carry a payload or credential: []byte,
// interfaces (any), maps, json.RawMessage, and structs from other modules
// (protobuf messages among them).
func payloadCarriers(t reflect.Type) []string {
	var bad []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if t.Kind() == reflect.Struct { // structs once, so recursive types end
			if seen[t] {
				return
			}
			seen[t] = true
		}
		switch {
		case t == timeType, t == textType:
			return
		case t == reflect.TypeFor[json.RawMessage]():
			bad = append(bad, path+": json.RawMessage")
			return
		}
		switch t.Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			return
		case reflect.Pointer:
			walk(t.Elem(), path)
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() == reflect.Uint8 {
				bad = append(bad, path+": []byte")
				return
			}
			walk(t.Elem(), path+"[]")
		case reflect.Struct: // named structs must be porthole's; anonymous ones are walked
			if t.Name() != "" && !strings.HasPrefix(t.PkgPath()+"/", ownModule) {
				bad = append(bad, fmt.Sprintf("%s: foreign struct %s.%s", path, t.PkgPath(), t.Name()))
				return
			}
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				walk(f.Type, path+"."+f.Name)
			}
		default:
			bad = append(bad, fmt.Sprintf("%s: %s (%s)", path, t, t.Kind()))
		}
	}
	walk(t, t.String())
	return bad
}

func TestNoToolOutputCanCarryAPayload(t *testing.T) {
	t.Parallel()
	catalog := (&Server{reader: &fakeReader{}}).catalog()
	if len(catalog) != len(servedTools) {
		t.Fatalf("catalog has %d tools, want %d", len(catalog), len(servedTools))
	}
	for _, tl := range catalog {
		for _, p := range payloadCarriers(tl.output) {
			t.Errorf("%s: %s", tl.def.Name, p)
		}
	}
}

// plantedResult has one of everything the walk must refuse.
type plantedResult struct {
	OK      string
	Bytes   []byte
	Any     any
	Map     map[string]string
	Raw     json.RawMessage
	Foreign *url.URL
	Deep    []struct{ Inner *[]any }
}

func TestPayloadWalkCatchesAPlantedBadType(t *testing.T) {
	t.Parallel()
	got := payloadCarriers(reflect.TypeFor[*plantedResult]())
	for _, want := range []string{".Bytes", ".Any", ".Map", ".Raw", ".Foreign", ".Deep[].Inner[]"} {
		found := false
		for _, g := range got {
			if strings.Contains(g, want+":") {
				found = true
			}
		}
		if !found {
			t.Errorf("the walk missed %s; it reported %v", want, got)
		}
	}
}
