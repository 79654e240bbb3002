// This file names the spec's component schemas, so that two features may
// each declare a View, a CreateInput and an Output.
package api

import (
	"path"
	"reflect"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// schemaName names the component schema of the Go type t: huma's name,
// with each name a feature declares led by its package's name unless it
// leads with it already (bookmarks.View is BookmarksView, bookmarks'
// unnamed CreateInput body BookmarksCreateInputBody), so two features'
// names never collide. A feature is a package of this module outside api,
// auth and streams; an unnamed struct belongs to the package that asked
// huma for its schema.
func schemaName(t reflect.Type, hint string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name, pkg := t.Name(), t.PkgPath()
	if name == "" {
		name = hint
		if t.Kind() == reflect.Struct { // only structs get a name in the spec
			pkg = callerPackage()
		}
	}
	// As huma does: []T is ListT, and a generic's brackets and commas
	// split it into names, each package-qualified but the first.
	parts := strings.FieldsFunc(strings.ReplaceAll(name, "[]", "List["), func(r rune) bool {
		return r == '[' || r == ']' || r == '*' || r == ','
	})
	var b strings.Builder
	for i, part := range parts {
		dir, base := "", part
		if dot := strings.LastIndexByte(part, '.'); dot >= 0 {
			dir, base = part[:dot], part[dot+1:]
		} else if i == 0 {
			dir = pkg
		}
		base = upper(base)
		if lead := featureName(dir); !strings.HasPrefix(base, lead) {
			b.WriteString(lead)
		}
		b.WriteString(base)
	}
	return b.String()
}

// moduleRoot is this module's path: api's, less /api.
var moduleRoot = path.Dir(reflect.TypeFor[Error]().PkgPath())

// featureName is the name that leads the names of package pkg: its last
// element, upper-cased; "" for the platform's and other modules'.
func featureName(pkg string) string {
	pkg = strings.TrimSuffix(pkg, "_test")
	rel, ok := strings.CutPrefix(pkg, moduleRoot+"/")
	if !ok {
		return ""
	}
	switch top, _, _ := strings.Cut(rel, "/"); top {
	case "api", "auth", "streams":
		return ""
	}
	return upper(path.Base(pkg))
}

// humaPath is huma's module path.
var humaPath = reflect.TypeFor[huma.Schema]().PkgPath()

// callerPackage is the import path of the first function on the stack,
// above schemaName, outside huma.
func callerPackage() string {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		pkg := funcPackage(f.Function)
		if pkg != humaPath && !strings.HasPrefix(pkg, humaPath+"/") {
			return pkg
		}
		if !more {
			return ""
		}
	}
}

// funcPackage is the import path in a runtime function name
// (github.com/x/y.(*T).M.func1 is in github.com/x/y).
func funcPackage(fn string) string {
	fn, _, _ = strings.Cut(fn, "[")
	slash := strings.LastIndexByte(fn, '/') + 1
	if dot := strings.IndexByte(fn[slash:], '.'); dot >= 0 {
		return fn[:slash+dot]
	}
	return fn
}

// upper is s with its first letter upper-cased.
func upper(s string) string {
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
