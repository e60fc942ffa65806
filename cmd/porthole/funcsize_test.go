package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Function size: no function of non-test code is over maxComplexity
// (cyclomatic: one, plus one for each if, for, case, && and ||) or
// maxFuncLines lines, unless the last line of its doc comment says why it
// reads better whole ("Whole: a switch over the protocol's cases"). The
// copied server tokenizer (policy/internal/serversql) is not porthole's
// code and is left as its authors wrote it.
const (
	maxComplexity = 15
	maxFuncLines  = 60
)

// oversize walks the Go files under root (tests, testdata and the copied
// tokenizer aside) and returns "path name" for each function over a bound
// without a reason, and the description of each for the failure message.
func oversize(t *testing.T, root string) (names []string, why map[string]string) {
	t.Helper()
	why = map[string]string{}
	eachGoSource(t, root, map[string]bool{"policy/internal/serversql": true}, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || hasWholeReason(fn.Doc) {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			c := complexity(fn)
			if c > maxComplexity || lines > maxFuncLines {
				name := rel + " " + funcName(fn)
				names = append(names, name)
				why[name] = fmt.Sprintf("complexity %d, %d lines", c, lines)
			}
		}
	})
	slices.Sort(names)
	return names, why
}

func hasWholeReason(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	last := doc.List[len(doc.List)-1].Text
	return strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(last, "//")), "Whole: ")
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// complexity is fn's cyclomatic complexity as gocyclo counts it.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// TestNoFunctionGrowsPastItsBounds holds every function of non-test code
// to the bounds, and lists each one past them.
func TestNoFunctionGrowsPastItsBounds(t *testing.T) {
	t.Parallel()
	got, why := oversize(t, "../..")
	for _, name := range got {
		t.Errorf("%s: %s, over %d or %d lines: break it up, or say why it reads better whole in a last doc line \"Whole: ...\"", name, why[name], maxComplexity, maxFuncLines)
	}
}

// The measure is gocyclo's: a planted function of each kind is found.
func TestTheFunctionBoundsFindAPlantedOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var branches, long strings.Builder
	for i := range maxComplexity {
		fmt.Fprintf(&branches, "\tif x == %d || x < 0 {\n\t\tx++\n\t}\n", i)
	}
	for range maxFuncLines {
		long.WriteString("\tx++\n")
	}
	src := "package p\n\nfunc branchy(x int) int {\n" + branches.String() + "\treturn x\n}\n\n" +
		"func long(x int) int {\n" + long.String() + "\treturn x\n}\n\n" +
		"// whole reads better whole.\n//\n// Whole: a table of cases.\nfunc whole(x int) int {\n" + long.String() + "\treturn x\n}\n\n" +
		"func short(x int) int {\n\tif x > 0 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
	os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644)
	got, _ := oversize(t, dir)
	if !slices.Equal(got, []string{"p.go branchy", "p.go long"}) {
		t.Errorf("found %q", got)
	}
}
