package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/porthole-dev/porthole/temporal/read"
)

// The reader wrappers embed read.Reader, so a method they do not declare
// still compiles and goes through unmeasured or uncached: each must
// declare every method of read.Reader (Ping aside, which is neither timed
// nor cached).
func TestTheReaderWrappersDeclareEveryRead(t *testing.T) {
	t.Parallel()
	declared := map[string]map[string]bool{"timedReader": {}, "cachingReader": {}}
	for _, file := range []string{"metrics.go", "cache.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			recv := fn.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			if id, ok := recv.(*ast.Ident); ok && declared[id.Name] != nil {
				declared[id.Name][fn.Name.Name] = true
			}
		}
	}
	reader := reflect.TypeFor[read.Reader]()
	for i := range reader.NumMethod() {
		m := reader.Method(i).Name
		if m == "Ping" {
			continue
		}
		for wrapper, methods := range declared {
			if !methods[m] {
				t.Errorf("%s does not declare %s: its calls would go through the embedded reader, %s", wrapper, m, map[string]string{"timedReader": "unmeasured", "cachingReader": "uncached"}[wrapper])
			}
		}
	}
}
