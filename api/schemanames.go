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

// schemaName names the component schema of the Go type t: huma's name
// (huma.DefaultSchemaNamer: the type's name, a generic's type arguments
// appended, an unnamed type by huma's hint), with each name in it that a
// feature declares led by its package's name, unless it leads with it
// already. So the type bookmarks.View is BookmarksView and the body of
// bookmarks.CreateInput, an unnamed struct, is BookmarksCreateInputBody;
// bookmarks.BookmarksPage stays BookmarksPage, and api.Page[bookmarks.View]
// would be PageBookmarksView. Two features' names never collide, and a
// generated client's names say whose they are.
//
// A feature is any package of this module outside the platform: outside
// api, auth and streams and the packages under them, whose types (Error,
// APIKeyView, GapEvent, …) keep huma's names, as do those of other
// modules. A test package counts as the package it tests. An unnamed
// struct belongs to the package whose code asked huma for its schema: the
// one that called huma.Register with it, say.
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

// featureName is the name that leads the names of the package at path
// pkg: its last element, upper-cased; "" for the platform's packages and
// those of other modules.
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

// callerPackage is the import path of the code that asked huma for a
// schema: the first function on the stack, above schemaName, outside huma.
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

// funcPackage is the import path in a function's name as the runtime
// gives it: github.com/x/y.(*T).M.func1 and github.com/x/y.F[...] are in
// github.com/x/y.
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
