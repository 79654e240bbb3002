package api

import (
	"maps"
	"path"
	"reflect"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// schemaName names the component schema of t: huma's name, led by its
// feature package's name (bookmarks.View is BookmarksView), so two features'
// names never collide.
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
	// as huma does: []T is ListT, and a generic splits into names
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

var moduleRoot = path.Dir(reflect.TypeFor[Error]().PkgPath())

// featureName leads the names of package pkg: "" outside a feature.
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

var humaPath = reflect.TypeFor[huma.Schema]().PkgPath()

// callerPackage is the package of the first caller outside huma.
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

// funcPackage is the import path in a runtime function name.
func funcPackage(fn string) string {
	fn, _, _ = strings.Cut(fn, "[")
	slash := strings.LastIndexByte(fn, '/') + 1
	if dot := strings.IndexByte(fn[slash:], '.'); dot >= 0 {
		return fn[:slash+dot]
	}
	return fn
}

func upper(s string) string {
	if s == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// nameEscaper percent-encodes '%', '.' and '[' in member names: huma's
// validator path grows with each error on such names (quadratic work), and
// no declared name holds them (TestSpecPropertyNames).
var nameEscaper = strings.NewReplacer("%", "%25", ".", "%2E", "[", "%5B")

// escapedNames returns formats whose Unmarshal escapes member names in the
// generic copy (an *any) that huma validates.
func escapedNames(formats map[string]huma.Format) map[string]huma.Format {
	out := make(map[string]huma.Format, len(formats))
	for ct, f := range formats {
		unmarshal := f.Unmarshal
		f.Unmarshal = func(data []byte, v any) error {
			if err := unmarshal(data, v); err != nil {
				return err
			}
			if p, ok := v.(*any); ok {
				escapeNames(*p)
			}
			return nil
		}
		out[ct] = f
	}
	return out
}

func escapeNames(v any) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			escapeNames(e)
		}
	case map[string]any:
		var renamed map[string]any // all out before any back: "a%2Eb" may be a name of the body too
		for k, e := range v {
			escapeNames(e)
			if strings.ContainsAny(k, "%.[") {
				if renamed == nil {
					renamed = map[string]any{}
				}
				renamed[nameEscaper.Replace(k)] = e
				delete(v, k)
			}
		}
		maps.Copy(v, renamed)
	}
}
