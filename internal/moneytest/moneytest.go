// Package moneytest holds checks the money-handling packages' tests share.
package moneytest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// banned are identifiers that would let money pass through binary floating
// point: the float types, gjson's .Float(), strconv.ParseFloat, and
// shopspring/decimal's float constructors and accessors.
var banned = map[string]bool{"float64": true, "float32": true, "Float": true, "ParseFloat": true,
	"NewFromFloat": true, "NewFromFloat32": true, "NewFromFloatWithExponent": true, "Float64": true, "InexactFloat64": true}

// NoFloat fails t if any non-test Go file in the current directory (the
// package under test) uses one of the banned identifiers. Comments are not
// code, so the AST is checked, not the text.
func NoFloat(t testing.TB) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && banned[id.Name] {
				t.Errorf("%s uses %s", f, id.Name)
			}
			return true
		})
	}
}
